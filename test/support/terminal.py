"""Runs a shell command on a pseudo-terminal, as a person's terminal would (tests only).

    python3 terminal.py '<shell command>'

The command is the session leader of a new terminal and its foreground process group, so a
Ctrl-C typed there (the byte 0x03) makes the terminal's line discipline send SIGINT to that
whole group: the command, every process of a pipeline (`… | tee log`) and their foreground
children, exactly as a keypress does. What the terminal shows is copied to stdout as it
comes. Each line "ctrl-c" read on stdin types one Ctrl-C. Exits with the command's exit code
(128 + the signal when a signal ended it).
"""
import os
import pty
import select
import sys


def exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def main() -> int:
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp("bash", ["bash", "-c", sys.argv[1]])
    stdin = sys.stdin.fileno()
    os.set_blocking(stdin, False)
    pending = b""
    watching = [fd, stdin]
    status = None
    while True:
        ready, _, _ = select.select(watching, [], [], 0.2)
        if fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: every process holding the terminal is gone
                chunk = b""
            if chunk:
                os.write(1, chunk)
            else:
                watching.remove(fd)
        if stdin in ready:
            data = os.read(stdin, 4096)
            if not data:
                watching.remove(stdin)
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if line.strip() == b"ctrl-c":
                    os.write(fd, b"\x03")
        if status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
        # The command is gone: show what the terminal still holds, then end (a process it left
        # behind may still hold the terminal open: the caller's checks find it).
        if status is not None:
            while fd in watching and select.select([fd], [], [], 0.3)[0]:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                os.write(1, chunk)
            return exit_code(status)


if __name__ == "__main__":
    sys.exit(main())
