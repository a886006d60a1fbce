"""Print the golden-fingerprint table of the code as it is now.

Run ``python tests/plugins/regenerate_fingerprints.py`` after a reviewed change of some
policy's numbers and paste the printed dict over ``FINGERPRINTS`` in
``tests/plugins/test_fingerprints.py`` (see that module's docstring).
"""

from __future__ import annotations

import importlib.util
import pprint
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    spec = importlib.util.spec_from_file_location("_fingerprints", HERE / "test_fingerprints.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    print("FINGERPRINTS: dict[str, dict[str, str]] = " + pprint.pformat(module.current_table(), width=100, sort_dicts=False))


if __name__ == "__main__":
    main()
