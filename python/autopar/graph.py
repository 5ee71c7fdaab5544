"""An operator graph made in Python, in autopar's graph JSON (docs/graph-format.md): what
`model=` takes besides presets and files, and what autopar.from_torch returns.

    g = Graph("ffn")
    x = g.input("x", [32, 784])
    w = g.parameter("dense1.weight", [784, 512])
    h = g.op("dense1", "MatMul", [x, w])
    g.save("ffn.json")
"""

import json
import os
import tempfile


class Graph:
    """Tensors (inputs and parameters) and ops in topological order; each op's output tensor is
    named after the op unless named otherwise. Shapes of op outputs are inferred by autopar when
    the graph is read, and checked against `output_shapes` where given."""

    def __init__(self, name, description=None):
        self.name = name
        self.description = description
        self.tensors = []
        self.ops = []
        self._names = set()

    def _declare(self, name):
        if name in self._names:
            raise ValueError(f"graph {self.name}: tensor name '{name}' is already used")
        self._names.add(name)
        return name

    def input(self, name, shape, dtype="fp32"):
        """A tensor the data loader feeds (tokens, labels, images)."""
        self.tensors.append({"name": self._declare(name), "shape": list(shape), "dtype": dtype,
                             "role": "input"})
        return name

    def parameter(self, name, shape, dtype="fp32"):
        """A trainable tensor: it has gradients and optimizer state."""
        self.tensors.append({"name": self._declare(name), "shape": list(shape), "dtype": dtype,
                             "role": "parameter"})
        return name

    def op(self, name, kind, inputs, attrs=None, block=None, output_shape=None, outputs=None):
        """Appends an op; returns its output tensor's name (a list for several outputs)."""
        outputs = list(outputs) if outputs else [name]
        for output in outputs:
            self._declare(output)
        entry = {"name": name, "kind": kind, "inputs": list(inputs), "outputs": outputs}
        if attrs:
            entry["attrs"] = attrs
        if block:
            entry["block"] = block
        if output_shape is not None:
            entry["output_shapes"] = [list(output_shape)]
        self.ops.append(entry)
        return outputs[0] if len(outputs) == 1 else outputs

    def to_json(self):
        """The graph as the dict graph JSON holds."""
        graph = {"format": "autopar.graph", "version": 1, "name": self.name}
        if self.description:
            graph["description"] = self.description
        graph["tensors"] = self.tensors
        graph["ops"] = self.ops
        return graph

    def save(self, path):
        """Writes the graph JSON to `path` (atomically: a temporary file renamed over it)."""
        path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(path))
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=".graph-", suffix=".json")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump(self.to_json(), file, indent=1)
                file.write("\n")
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
        return path

    def __repr__(self):
        return f"Graph({self.name!r}, {len(self.tensors)} tensors, {len(self.ops)} ops)"
