"""The README's Python example runs as written."""
import os
import re

import pytest

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")


def test_readme_example_runs(capsys):
    if not os.path.exists(README):
        pytest.skip("no README.md beside python/ (an installed copy of the tests)")
    with open(README, encoding="utf-8") as f:
        text = f.read()
    section = text[text.index("## Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md (Python)", "exec"), {})
    out = capsys.readouterr().out
    assert "(480, 640) int32" in out
