"""Keyword arguments to the options a verb declares, and its exit status to results or exceptions.

The options are the command's own (src/cli): `_autopar.options(verb)` lists them, so a keyword is
checked against the same declaration the command line uses, and its value by the same validators
with the same one-line messages.
"""

import difflib
import functools
import numbers
import os

from . import _autopar

EXIT_BAD_INPUT = 2
EXIT_DOES_NOT_FIT = 3


class DoesNotFit(Exception):
    """The input was valid, but no configuration of it fits device memory.

    `message` is the command's advice (which constraint failed, by how much), `fixes` the changes
    autopar verified by planning or estimating them (each a dict: `flags` as on the command line,
    `keywords` the same as keyword arguments, and the step time and peak it was verified at), and
    `result` what was planned or estimated without them, where there is one.
    """

    def __init__(self, message, fixes=(), result=None):
        super().__init__(message)
        self.message = message
        self.fixes = list(fixes)
        self.result = result


@functools.lru_cache(maxsize=None)
def declared_options(verb):
    """{keyword: (flag, takes a value, the negating flag or None, positional, delimiter)} for
    `verb`. A flag's `no-` name is its negation only beside its positive name
    (--overlap-grad-reduce / --no-overlap-grad-reduce); a flag named `no-...` alone is a flag."""
    declared = {}
    for names, takes_value, positional, delimiter, _ in _autopar.options(verb):
        negation = next((name for name in names[1:] if name.startswith("no-")), None)
        for name in names:
            if name == negation:
                continue
            declared[name.replace("-", "_")] = (name, takes_value, negation, positional,
                                                delimiter)
    return declared


def _value_text(keyword, value):
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, numbers.Integral)):
        return str(value)
    if isinstance(value, numbers.Real):
        return repr(float(value))
    raise ValueError(f"{keyword}: expected a string, number or path, got {type(value).__name__}")


def _values(keyword, value, delimiter):
    """The option's values as words: a list joined with the option's delimiter, or one word per
    item where the option is given again for each (--shard A=... --shard B=...)."""
    if not isinstance(value, (list, tuple)):
        return [_value_text(keyword, value)]
    items = [_value_text(keyword, item) for item in value]
    return [delimiter.join(items)] if delimiter else items


def arguments(verb, keywords):
    """The command line `autopar VERB ...` for `keywords` (None values left out)."""
    declared = declared_options(verb)
    words, positionals = [verb], []
    for keyword, value in keywords.items():
        if value is None:
            continue
        if keyword not in declared:
            close = difflib.get_close_matches(keyword, declared, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise ValueError(f"{verb}: unknown argument '{keyword}'{hint}")
        flag, takes_value, negation, positional, delimiter = declared[keyword]
        if positional:
            positionals.extend(_values(keyword, value, delimiter))
        elif isinstance(value, bool) and negation:
            words.append(f"--{flag}" if value else f"--{negation}")
        elif takes_value:
            # One word each, so a value that starts with '-' is not read as a flag.
            words.extend(f"--{flag}={text}" for text in _values(keyword, value, delimiter))
        elif value is True:
            words.append(f"--{flag}")
        elif value is False:
            if negation:
                words.append(f"--{negation}")
        else:
            raise ValueError(f"{keyword}: expected True or False, got {value!r}")
    # After "--", so a positional that starts with '-' is not read as a flag.
    return words + (["--", *positionals] if positionals else [])


def error_lines(err):
    """The command's stderr lines without the "autopar: " and "autopar: error: " prefixes."""
    lines = []
    for line in err.splitlines():
        for prefix in ("autopar: error: ", "autopar: "):
            if line.startswith(prefix):
                line = line[len(prefix):]
                break
        if line.strip():
            lines.append(line.strip())
    return lines


def run(words):
    """Runs `autopar WORDS` in-process: its stdout and stderr, or ValueError / DoesNotFit /
    RuntimeError."""
    status, out, err = _autopar.run(words)
    if status == 0:
        return out, err
    raise_for(status, words, err)


def raise_for(status, words, err):
    """The exception for a verb's non-zero exit status, with its one-line messages."""
    message = "\n".join(error_lines(err)) or f"autopar {words[0]} exited with status {status}"
    if status == EXIT_BAD_INPUT:
        raise ValueError(message)
    if status == EXIT_DOES_NOT_FIT:
        raise DoesNotFit(message)
    raise RuntimeError(message)
