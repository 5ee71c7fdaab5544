"""What the framework-facts scripts (scripts/framework_facts.py and the *_facts.py modules it
imports) read a framework's source with: files of a git repository at one commit, and the fields a
Python class declares, found with the ast module."""

import ast
import subprocess
import sys


def git_commit(git_dir, rev):
    """The full commit `rev` names."""
    return subprocess.run(["git", "--git-dir", git_dir, "rev-parse", rev], check=True,
                          capture_output=True, text=True).stdout.strip()


def git_show(git_dir, rev, path):
    """The text of `path` at `rev`."""
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{rev}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def git_ls(git_dir, rev, path):
    """The names in directory `path` at `rev`; none when it is missing."""
    out = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "--name-only", f"{rev}:{path}"],
                         check=False, capture_output=True, text=True).stdout
    return out.split()


def git_files(git_dir, rev):
    """Every file's path at `rev`."""
    return subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", rev],
                          check=True, capture_output=True, text=True).stdout.splitlines()


def find_class(tree, dotted):
    """The ClassDef of `dotted` ("Trainer.Config": a class nested in another) in a module."""
    body = tree.body
    node = None
    for name in dotted.split("."):
        node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == name), None)
        if node is None:
            sys.exit(f"framework_facts: class {dotted} not found")
        body = node.body
    return node


def class_fields(source, dotted):
    """The annotated fields of class `dotted` in `source` (text or a parsed module), in order."""
    tree = ast.parse(source) if isinstance(source, str) else source
    node = find_class(tree, dotted)
    return [n.target.id for n in node.body
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
