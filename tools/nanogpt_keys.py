#!/usr/bin/env python3
"""Prints nanoGPT's configuration keys, the names its users give as --key=value or in a config
file: the module-level settings of train.py and of sample.py (karpathy/nanoGPT), read as
configurator.py reads them (names bound to an int, float, bool or str before the configurator
runs). tests/unit/nanogpt_keys_test.cpp holds tinylm's hints for them (train/nanogpt_keys.cpp)
to this list.

  /usr/bin/python3 tools/nanogpt_keys.py /path/to/nanoGPT
"""
import ast
import sys
from pathlib import Path


def keys(path: Path) -> list[str]:
    found = []
    for node in ast.parse(path.read_text()).body:
        # The configurator runs where the script exec()s it: settings come before that line.
        if isinstance(node, ast.Expr) and "configurator" in ast.unparse(node):
            break
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if not isinstance(target, ast.Name) or target.id.startswith("_"):
                continue
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                # train.py's dtype is an expression (bf16 where the GPU has it); still a str.
                value = "" if target.id == "dtype" else None
            if isinstance(value, (int, float, bool, str)) and target.id not in found:
                found.append(target.id)
    return found


def main() -> None:
    repo = Path(sys.argv[1])
    for script in ("train.py", "sample.py"):
        print(f"{script}: {' '.join(keys(repo / script))}")


if __name__ == "__main__":
    main()
