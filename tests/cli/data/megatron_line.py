"""Reads a search report on stdin and checks its Megatron-LM line as a shell would split it:
prints the token count, the tokens that are neither a flag nor a flag's value, whether a
parenthesis is left, and the notes printed after the line."""
import shlex
import sys

lines = sys.stdin.read().splitlines()
line = next(l for l in lines if l.startswith("Megatron-LM: "))[len("Megatron-LM: "):]
tokens = shlex.split(line)
stray = [t for i, t in enumerate(tokens)
         if not t.startswith("--") and (i == 0 or not tokens[i - 1].startswith("--"))]
print("tokens", len(tokens), "stray", stray, "parens", "(" in line)
for note in (l for l in lines if l.startswith("  note: ")):
    print(note)
