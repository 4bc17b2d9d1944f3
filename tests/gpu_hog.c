/* Holds all but KEEP MiB of the current GPU's free memory while a command runs, so that the command
 * meets a GPU out of memory (tests/cli_gpu_limits.sh). Usage: gpu_hog KEEP_MIB COMMAND [ARGS...]; exits
 * with the command's status (its output as it writes it), 77 without a usable device. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: gpu_hog KEEP_MIB COMMAND [ARGS...]\n");
        return 2;
    }
    size_t keep = (size_t)strtoull(argv[1], NULL, 10) << 20, free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
        fprintf(stderr, "gpu_hog: no usable CUDA device\n");
        return 77;
    }
    /* One allocation as large as the card gives, stepping down where the free memory is fragmented. */
    void *held = NULL;
    size_t take = free_bytes > keep ? free_bytes - keep : 0;
    while (take > ((size_t)64 << 20) && cudaMalloc(&held, take) != cudaSuccess) {
        cudaGetLastError();
        held = NULL;
        take -= (size_t)64 << 20;
    }
    cudaMemGetInfo(&free_bytes, &total);
    fprintf(stderr, "gpu_hog: holding %zu MiB, %zu of %zu MiB free\n", take >> 20, free_bytes >> 20, total >> 20);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror("gpu_hog: exec");
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return 1;
    cudaFree(held);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
