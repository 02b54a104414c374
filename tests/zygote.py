"""Run Python scripts in forks of one process that has imported torch and triton.

Importing torch and triton costs about 4 s of CPU; the suite runs some fifty
scripts (each snippet as a program, each page's visible code), and on CI's
two cores those imports alone were minutes. A zygote imports the two once;
each script then runs in a child forked from it, with the working directory,
environment, ``sys.argv``, ``sys.path[0]`` and standard streams a fresh
``python script.py`` would have. What the child inherits besides is the two
packages already in ``sys.modules``, as the script's own first lines would
leave them: nothing the script itself did not import is bound in its
namespace, so a missing import still fails. The zygote is started isolated
(``python -I``): no PYTHONPATH, no current directory on the path.

    with Zygote() as z:
        code, out, err = z.run("snippets/x.py", cwd=REPO, env={...}, timeout=600)

``code`` is the exit status, or minus the signal that ended the child (as
``subprocess`` reports it): ``-signal.SIGXCPU`` when ``cpu_limit`` ran out.
Runs may be concurrent (one thread each); the zygote forks for each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

# The zygote's program: import torch and triton, then serve one JSON request
# per line: fork, set the child up as `python script` would be, run it.
_SERVER = r"""
import json, os, sys, threading
import torch, triton  # the imports every script shares

def child(req):
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    out = os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(out, 1)
    os.dup2(err, 2)
    # new stream objects: the zygote's own may hold half a reply
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False, buffering=1)
    if req.get("cpu"):
        import resource
        resource.setrlimit(resource.RLIMIT_CPU, (req["cpu"], req["cpu"] + 5))
    script = os.path.abspath(req["script"])
    sys.argv = [req["script"], *req.get("args", [])]
    sys.path[0:0] = [os.path.dirname(script)]
    code = 0
    try:
        import runpy
        runpy.run_path(script, run_name="__main__")
    except SystemExit as done:
        c = done.code
        code = c if isinstance(c, int) else (0 if c is None else 1)
        if c is not None and not isinstance(c, int):
            print(c, file=sys.stderr)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    try:
        import atexit
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)

lock = threading.Lock()

def reply(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

def wait(rid, pid):
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    reply({"id": rid, "code": code})

for line in sys.stdin:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        child(req)
    reply({"id": req["id"], "pid": pid})
    threading.Thread(target=wait, args=(req["id"], pid), daemon=True).start()
"""


class Zygote:
    def __init__(self, env: dict | None = None):
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tempfile.gettempdir(),
        )
        self._lock = threading.Lock()
        self._waiting: dict[int, dict] = {}
        self._next = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self._proc.stdout:
            message = json.loads(line)
            slot = self._waiting[message["id"]]
            slot.update(message)
            if "code" in message:
                slot["done"].set()
            else:
                slot["started"].set()
        for slot in list(self._waiting.values()):  # the zygote died
            slot.setdefault("code", None)
            slot["started"].set()
            slot["done"].set()

    def run(
        self,
        script: str | Path,
        *,
        cwd: str | Path,
        env: dict,
        args: tuple = (),
        timeout: float = 600,
        cpu_limit: int | None = None,
    ) -> tuple[int | None, str, str]:
        """(exit code, stdout, stderr) of ``python script *args`` in ``cwd``;
        None as the code if it ran past ``timeout`` (it is killed)."""
        with tempfile.TemporaryDirectory(prefix="zygote-") as tmp:
            out, err = Path(tmp, "out"), Path(tmp, "err")
            with self._lock:
                rid, self._next = self._next, self._next + 1
                slot = self._waiting[rid] = {
                    "started": threading.Event(),
                    "done": threading.Event(),
                }
                request = {"id": rid, "script": str(script), "args": list(args),
                           "cwd": str(cwd), "env": env, "stdout": str(out),
                           "stderr": str(err), "cpu": cpu_limit}  # fmt: skip
                self._proc.stdin.write(json.dumps(request) + "\n")
                self._proc.stdin.flush()
            if not slot["done"].wait(timeout):
                if slot.get("pid"):
                    _kill(slot["pid"])
                slot["done"].wait(10)
                code = None
            else:
                code = slot["code"]
                if code is None:
                    raise RuntimeError("the zygote process died")
            self._waiting.pop(rid, None)
            return (code, _read(out), _read(err))

    def close(self):
        if self._proc.poll() is None:
            self._proc.stdin.close()
            self._proc.wait(30)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _kill(pid: int) -> None:
    import contextlib
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
