"""The one process manager of the feeding runtime: fork a daemonic child, tell how it ended, stop it.

Used by the shared-memory workers (``data/worker.py``) and ``multiprocess_reader`` (``reader/parallel.py``).

* Children are ``multiprocessing`` fork processes (so ``multiprocessing.active_children()`` and its
  exit-time cleanup see them), daemonic, with one change: when their exit status was collected by
  someone else, they still count as ended. That happens when the application ignores SIGCHLD (the
  kernel then reaps children itself): ``waitpid`` fails with ECHILD, which ``multiprocessing`` takes
  for "not started yet" forever, so ``join`` returned with no exit code, ``close`` raised "Cannot
  close a process while it is still running" and the child's pipe fds leaked. Here such a child has
  the exit code ``UNKNOWN_EXIT_STATUS``, and ``describe_exit`` says so.
* ``stop_processes`` is the one way children are stopped: SIGTERM to those still running, a join of
  at most ``JOIN_TIMEOUT`` each, SIGKILL for the rest, then each child's fds are released. A Ctrl-C
  in the middle does not leave children behind: the stop finishes, then the KeyboardInterrupt is
  raised again.
"""
import os
import signal
from multiprocessing import popen_fork
from multiprocessing.context import ForkProcess

__all__ = ["JOIN_TIMEOUT", "UNKNOWN_EXIT_STATUS", "describe_exit", "start_process", "stop_processes"]

JOIN_TIMEOUT = 1.0
"""Seconds to wait for a terminated (SIGTERM) child before killing it (SIGKILL)."""

UNKNOWN_EXIT_STATUS = 256
"""The exit code of a child that ended but whose status was collected elsewhere (SIGCHLD ignored);
no real exit code (0-255) or signal (negative) has this value."""

SIGNAL_HINTS = {
    "SIGKILL": " SIGKILL usually means the out-of-memory killer (see `dmesg`) or an external kill.",
    "SIGBUS": " SIGBUS usually means /dev/shm is full: run docker with --shm-size=8g, or use "
              "use_multiprocess=False.",
    "SIGSEGV": " SIGSEGV means a crash in native code called by the reader.",
}


class _Popen(popen_fork.Popen):
    def poll(self, flag=os.WNOHANG):
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, flag)
            except ChildProcessError:  # already reaped, by the kernel (SIGCHLD ignored) or by other code
                self.returncode = UNKNOWN_EXIT_STATUS
                return self.returncode
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


class _Process(ForkProcess):
    @staticmethod
    def _Popen(process_obj):
        return _Popen(process_obj)


def start_process(target, args, name):
    """Fork and start a daemonic child running ``target(*args)``; returns the started process."""
    process = _Process(target=target, args=args, name=name, daemon=True)
    process.start()
    return process


def describe_exit(process):
    """How ``process`` ended, as the end of a sentence: "was killed by signal SIGKILL (exit code -9).
    <hint>", "exited with code 1 without reporting an error.", that its status is unknown, or that it
    is still running."""
    code = process.exitcode
    if code is None:
        return "closed its pipe but is still running."
    if code == UNKNOWN_EXIT_STATUS:
        return ("ended without reporting an error; its exit status is unknown (SIGCHLD is ignored in this "
                "process, so the system discarded it).")
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by signal {name} (exit code {code}).{SIGNAL_HINTS.get(name, '')}"
    return f"exited with code {code} without reporting an error."


def stop_processes(processes):
    """Stop and release ``processes`` (started by ``start_process``): SIGTERM, a join of at most
    ``JOIN_TIMEOUT`` each, SIGKILL for what is left, then their fds. A
    KeyboardInterrupt meanwhile is raised again once everything is released."""
    interrupted = False
    for process in processes:
        try:
            if process.exitcode is None:
                process.terminate()
        except KeyboardInterrupt:
            interrupted = True
    for process in processes:
        while True:
            try:
                process.join(JOIN_TIMEOUT)
                if process.exitcode is None:
                    process.kill()
                    process.join()
                process.close()
                break
            except KeyboardInterrupt:
                interrupted = True
                _kill_quietly(process)
    if interrupted:
        raise KeyboardInterrupt


def _kill_quietly(process):
    try:
        if process.exitcode is None:
            process.kill()
    except (KeyboardInterrupt, ValueError):
        pass

