"""protected_files: the protected-file calls of rouse_handler against a running rouse-agent (HandlerLibraryTests).

Usage: protected_files.py SOCKET HANDLER. Registers as HANDLER, then writes, reads, re-classes, opens (a
complete-unless-open file, through its handle), closes and removes protected files, printing one line per answer
(the same lines as the C twin, clients/c/tests/protected-files.c)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import rouse_handler  # noqa: E402


def show(what, call):
    try:
        result = call()
    except rouse_handler.AgentError as error:
        print("%s error=%s" % (what, error.code))
        return None
    if isinstance(result, bytes):
        print("%s data=%s" % (what, result.decode("utf-8")))
    elif isinstance(result, int):
        print("%s handle" % what)
    else:
        print("%s ok" % what)
    return result


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: protected_files.py SOCKET HANDLER\n")
        return 2
    agent = rouse_handler.connect(sys.argv[1])
    agent.register(sys.argv[2])
    show("write", lambda: agent.write_protected("notes", b"hello", protection="complete"))
    show("read", lambda: agent.read_protected("notes"))
    show("reclass", lambda: agent.reclass_protected("notes", "none"))
    show("write-bad-class", lambda: agent.write_protected("x", b"1", protection="secret"))
    handle = show("open", lambda: agent.open_protected("recording", create=True))
    show("write-open", lambda: agent.write_protected("recording", b"part 1", handle=handle))
    show("read-open", lambda: agent.read_protected("recording", handle=handle))
    show("close", lambda: agent.close_protected("recording", handle))
    show("read-closed", lambda: agent.read_protected("recording", handle=handle))
    show("remove", lambda: agent.remove_protected("notes"))
    show("read-removed", lambda: agent.read_protected("notes"))
    agent.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
