"""The pipe-echo child: the most minimal newline-delimited echo loop (physical limit)."""

import sys

out = sys.stdout.buffer
for line in sys.stdin.buffer:
    out.write(line)
    out.flush()
