"""Import a snippet file as a module once per process, whoever asks.

Snippets are plain files, not a package, and the tests, the runner's
discovery and the compiler-output helpers each import them. Importing one
file twice is not harmless: ``snippets/softmax_autograd.py`` registers a
``torch.library`` op, and a second registration under the same name destroys
the first, leaving the first module's op pointing at a freed dispatcher entry
(an intermittent segfault when it is called). So every caller shares one
module per file; a file edited since it was imported is imported afresh.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_loaded: dict[Path, tuple[tuple[int, int], ModuleType]] = {}


def load_file(path: Path | str) -> ModuleType:
    path = Path(path).resolve()
    stat = path.stat()  # a missing file raises FileNotFoundError, naming it
    version = (stat.st_mtime_ns, stat.st_size)
    cached = _loaded.get(path)
    if cached is not None and cached[0] == version:
        return cached[1]
    # Unique per path: a test's copy of a snippet must not replace the real one.
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
    name = f"_course_snippet_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    _loaded[path] = (version, module)
    return module
