/* PNG pictures written row by row without holding them (stored deflate blocks, RGB, 8 bits). */
#ifndef PCLI_PNG_H
#define PCLI_PNG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct pcli_png pcli_png;
/* Creates path and starts the picture. 0, or -1 with err set. */
int pcli_png_open(pcli_png **png, const char *path, size_t width, size_t height, char *err, size_t errsize);
/* The same into an open file the caller closes (path names it in messages); title: a tEXt "Title"
 * chunk, or NULL. */
int pcli_png_begin(pcli_png **png, FILE *fp, const char *path, size_t width, size_t height, const char *title,
                   char *err, size_t errsize);
int pcli_png_row(pcli_png *png, const uint8_t *rgb); /* width x 3 bytes; 0 or -1 (write error) */
/* Checks that every row came, ends the picture, closes the file if it was opened here, frees. */
int pcli_png_close(pcli_png *png, char *err, size_t errsize);

#endif
