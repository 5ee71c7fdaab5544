"""autopar.from_torch: a PyTorch nn.Module traced with torch.fx into autopar's operator graph.

Each traced node becomes one op named by its module path ("blocks.2.mlp.fc1"), parameters become
parameter tensors named as the module's state dict names them, and the ops inside each entry of
an nn.ModuleList or nn.Sequential of alike blocks are tagged with that entry's path
("blocks.2"), so the layer-level search pipelines over the blocks and the op-level searches fold
and shard them like a transformer's layers. Shapes and dtypes come from running the traced module
once on `example_inputs` (torch.fx's ShapeProp), so the graph's batch is theirs.

What maps to what (docs/python.md has the table): nn.Linear to MatMul (+ Add for its bias),
nn.Embedding to Gather, nn.LayerNorm to LayerNorm, activations, dropout, softmax, matmul,
elementwise arithmetic between tensors, view/reshape/flatten/squeeze to Reshape,
transpose/permute to Transpose, cat to Concat, mean/sum/amax to the reductions, cross_entropy to
CrossEntropy. Buffers (a causal mask, say) are inputs: they are fed, not trained. Arithmetic with
a Python number (a scale) keeps its tensor operand: one elementwise pass autopar leaves out. Any
other node is an Opaque op, replicated, with one warning per kind, as ONNX import does.
"""

import operator
import warnings

import torch
import torch.fx
import torch.nn.functional as F
from torch.fx.passes.shape_prop import ShapeProp

from .graph import Graph

_DTYPES = {torch.float32: "fp32", torch.float64: "fp32", torch.bfloat16: "bf16",
           torch.float16: "fp16", torch.int64: "int64", torch.int32: "int32", torch.int8: "int8",
           torch.uint8: "int8", torch.bool: "bool"}

_UNARY_MODULES = {torch.nn.ReLU: "ReLU", torch.nn.GELU: "GeLU", torch.nn.SiLU: "SiLU",
                  torch.nn.Tanh: "Tanh", torch.nn.Sigmoid: "Sigmoid"}
_UNARY_FUNCTIONS = {F.relu: "ReLU", torch.relu: "ReLU", F.gelu: "GeLU", F.silu: "SiLU",
                    torch.tanh: "Tanh", torch.sigmoid: "Sigmoid", torch.exp: "Exp",
                    torch.sqrt: "Sqrt", torch.neg: "Neg", operator.neg: "Neg"}
_UNARY_METHODS = {"relu": "ReLU", "tanh": "Tanh", "sigmoid": "Sigmoid", "exp": "Exp",
                  "sqrt": "Sqrt", "neg": "Neg"}
_BINARY = {operator.add: "Add", torch.add: "Add", operator.sub: "Sub", torch.sub: "Sub",
           operator.mul: "Mul", torch.mul: "Mul", operator.truediv: "Div", torch.div: "Div"}
_BINARY_METHODS = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div"}
_MATMULS = {operator.matmul, torch.matmul, torch.bmm}
_REDUCTIONS = {torch.mean: "ReduceMean", torch.sum: "ReduceSum", torch.amax: "ReduceMax"}
_REDUCTION_METHODS = {"mean": "ReduceMean", "sum": "ReduceSum", "amax": "ReduceMax"}
_RESHAPE_METHODS = {"view", "reshape", "flatten", "squeeze", "unsqueeze"}
_ALIAS_METHODS = {"contiguous", "clone", "detach"}
_CASTS = {"float": torch.float32, "half": torch.float16, "bfloat16": torch.bfloat16,
          "long": torch.int64, "int": torch.int32}


class _PathTracer(torch.fx.Tracer):
    """torch.fx's tracer that records on every node the path of the module whose forward made it
    ("" at the top level)."""

    def __init__(self):
        super().__init__()
        self._paths = [""]

    def call_module(self, module, forward, args, kwargs):
        self._paths.append(self.path_of_module(module))
        try:
            return super().call_module(module, forward, args, kwargs)
        finally:
            self._paths.pop()

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        node.meta["autopar_path"] = self._paths[-1]
        return node


def _signature(module):
    return (type(module), tuple((name, tuple(p.shape)) for name, p in module.named_parameters()))


def _block_paths(module):
    """The paths of the entries of every nn.ModuleList / nn.Sequential whose two or more entries
    are alike (one class, the same parameter shapes): the model's repeated blocks."""
    blocks = set()
    for path, container in module.named_modules():
        if not isinstance(container, (torch.nn.ModuleList, torch.nn.Sequential)):
            continue
        entries = list(container.named_children())
        if len(entries) < 2 or len({_signature(child) for _, child in entries}) != 1:
            continue
        for name, _ in entries:
            blocks.add(f"{path}.{name}" if path else name)
    return blocks


def _block_of(path, blocks):
    """The innermost repeated block `path` lies in, or None."""
    best = None
    for block in blocks:
        if (path == block or path.startswith(block + ".")) and (best is None or
                                                                  len(block) > len(best)):
            best = block
    return best


def _loss_labels(node):
    """A cross_entropy call's target, given by position or as `target=`."""
    return node.args[1] if len(node.args) > 1 else node.kwargs.get("target")


def _axis(dim, rank):
    return dim + rank if dim < 0 else dim


class _Converter:
    """Walks the traced graph in order and appends autopar ops to `graph`."""

    def __init__(self, traced, module, graph):
        self.traced = traced
        self.module = module
        self.graph = graph
        self.blocks = _block_paths(module)
        self.tensors = {}  # fx node -> autopar tensor name
        self.declared = set()
        self.unknown = {}  # Opaque kind -> nodes
        self.parts = {}  # a node returning a tuple -> its Opaque op's output tensors
        self.parameter_names = {}  # id(parameter) -> its tensor: a tied weight is one tensor
        self.names = set()
        self.folded = self.flattened_loss_inputs()

    def flattened_loss_inputs(self):
        """The reshapes that only flatten a cross-entropy's leading dims (logits [b, s, v] to
        [b·s, v] and labels [b, s] to [b·s], as torch's loss wants them): autopar's CrossEntropy
        takes the leading dims as they are, so those reshapes become their sources."""
        folded = set()
        for node in self.traced.graph.nodes:
            if node.op != "call_function" or node.target is not F.cross_entropy:
                continue
            logits, labels = node.args[0], _loss_labels(node)
            if not all(isinstance(n, torch.fx.Node) and self.is_flatten(n) and len(n.users) == 1
                       for n in (logits, labels)):
                continue
            logits_source, labels_source = logits.args[0], labels.args[0]
            if self.shape(logits_source)[:-1] == self.shape(labels_source):
                folded.update((logits, labels))
        return folded

    def is_flatten(self, node):
        reshapes = node.op == "call_method" and node.target in ("flatten", "view", "reshape")
        reshapes = reshapes or (node.op == "call_function" and
                                node.target in (torch.flatten, torch.reshape))
        if not reshapes or self.meta(node) is None or self.meta(node.args[0]) is None:
            return False
        before, after = self.shape(node.args[0]), self.shape(node)
        return len(before) > len(after) and before[len(before) - len(after) + 1:] == after[1:]

    # --- helpers -------------------------------------------------------------------------------
    @staticmethod
    def meta(node):
        """The node's TensorMetadata; None for a non-tensor and for a tuple of tensors."""
        meta = node.meta.get("tensor_meta")
        return meta if hasattr(meta, "shape") else None  # TensorMetadata is a named tuple

    @staticmethod
    def tuple_meta(node):
        """The TensorMetadata of each element of a node that returns a tuple of tensors."""
        meta = node.meta.get("tensor_meta")
        if isinstance(meta, (tuple, list)) and not hasattr(meta, "shape") and meta and \
                all(hasattr(m, "shape") for m in meta):
            return list(meta)
        return None

    def shape(self, node):
        return list(self.meta(node).shape)

    def dtype(self, node):
        meta = self.meta(node)
        return _DTYPES.get(meta.dtype, "fp32")

    def is_tensor(self, value):
        return isinstance(value, torch.fx.Node) and value in self.tensors

    def op_name(self, node):
        path = node.meta.get("autopar_path", "")
        if node.op == "call_module":
            name = node.target
        else:
            name = f"{path}.{node.name}" if path else node.name
        return self.unique(name)

    def unique(self, name):
        """`name`, or it with "_" appended until no op or declared tensor has it; reserved."""
        while name in self.names or name in self.declared:
            name += "_"
        self.names.add(name)
        return name

    def block_of(self, node):
        return _block_of(node.meta.get("autopar_path", ""), self.blocks)

    def parameter(self, name, tensor):
        """The parameter's tensor, declared once; a weight two modules share (a head tied to the
        embedding) is one tensor, named where it is first used."""
        if id(tensor) in self.parameter_names:
            return self.parameter_names[id(tensor)]
        self.declared.add(name)
        self.graph.parameter(name, list(tensor.shape), _DTYPES.get(tensor.dtype, "fp32"))
        self.parameter_names[id(tensor)] = name
        return name

    def emit(self, node, kind, inputs, attrs=None, name=None):
        name = name or self.op_name(node)
        output = self.graph.op(name, kind, inputs, attrs=attrs, block=self.block_of(node),
                               output_shape=self.shape(node))
        self.tensors[node] = output
        return output

    def emit_inner(self, node, suffix, kind, inputs, attrs=None):
        """An op before the node's own (a Linear's MatMul before its bias Add)."""
        return self.graph.op(self.unique(f"{node.target}.{suffix}"), kind, inputs, attrs=attrs,
                             block=self.block_of(node))

    def alias(self, node, source):
        self.tensors[node] = self.tensors[source]

    def opaque_tuple(self, node):
        """A node returning several tensors (chunk, split, topk, an LSTM): one Opaque op with an
        output per tensor; getitem picks them (self.parts)."""
        kind = self.kind_of(node)
        self.unknown[kind] = self.unknown.get(kind, 0) + 1
        metas = self.tuple_meta(node)
        name = self.op_name(node)
        inputs = [self.tensors[a] for a in node.all_input_nodes if a in self.tensors]
        types = [{"shape": list(m.shape), "dtype": _DTYPES.get(m.dtype, "fp32")} for m in metas]
        outputs = [f"{name}.{i}" for i in range(len(metas))]
        self.graph.op(name, "Opaque", inputs, attrs={"op_type": kind, "output_types": types},
                      block=self.block_of(node), outputs=outputs)
        self.parts[node] = outputs

    @staticmethod
    def kind_of(node):
        if node.op == "call_method":
            return f"Tensor.{node.target}"
        if node.op == "call_module":
            return f"torch.nn.{node.graph.owning_module.get_submodule(node.target).__class__.__name__}"
        return getattr(node.target, "__qualname__", str(node.target))

    def opaque(self, node, kind):
        self.unknown[kind] = self.unknown.get(kind, 0) + 1
        inputs = [self.tensors[a] for a in node.all_input_nodes if a in self.tensors]
        types = [{"shape": self.shape(node), "dtype": self.dtype(node)}]
        self.emit(node, "Opaque", inputs, {"op_type": kind, "output_types": types})

    # --- nodes ---------------------------------------------------------------------------------
    def convert(self):
        for node in self.traced.graph.nodes:
            if node.op == "output":
                continue
            if node.op != "placeholder" and self.meta(node) is None:
                if self.tuple_meta(node):
                    self.opaque_tuple(node)
                continue  # not a tensor (a size): used only through the shapes
            if node in self.folded:
                self.alias(node, node.args[0])
            else:
                getattr(self, f"on_{node.op}")(node)
        for kind, count in sorted(self.unknown.items()):
            warnings.warn(f"from_torch: {kind} is not an op autopar knows; {count} node(s) kept "
                          f"whole on every device (Opaque)", stacklevel=3)

    def on_placeholder(self, node):
        if self.meta(node) is None:
            return
        self.graph.input(node.name, self.shape(node), self.dtype(node))
        self.declared.add(node.name)
        self.tensors[node] = node.name

    def on_get_attr(self, node):
        value = self.traced
        for part in node.target.split("."):
            value = getattr(value, part)
        if isinstance(value, torch.nn.Parameter):
            self.tensors[node] = self.parameter(node.target, value)
        else:  # a buffer: fed like an input, not trained
            if node.target not in self.declared:
                self.declared.add(node.target)
                self.graph.input(node.target, list(value.shape), _DTYPES.get(value.dtype, "fp32"))
            self.tensors[node] = node.target

    def on_call_module(self, node):
        module = self.traced.get_submodule(node.target)
        x = self.tensors.get(node.args[0]) if node.args else None
        path = node.target
        if isinstance(module, torch.nn.Linear):
            weight = self.parameter(f"{path}.weight", module.weight)
            if module.bias is None:
                self.emit(node, "MatMul", [x, weight], {"transpose_b": True})
            else:
                product = self.emit_inner(node, "matmul", "MatMul", [x, weight],
                                          {"transpose_b": True})
                self.emit(node, "Add", [product, self.parameter(f"{path}.bias", module.bias)])
        elif isinstance(module, torch.nn.Embedding):
            self.emit(node, "Gather", [self.parameter(f"{path}.weight", module.weight), x])
        elif isinstance(module, torch.nn.LayerNorm) and module.elementwise_affine and \
                getattr(module, "bias", None) is not None and len(module.normalized_shape) == 1:
            self.emit(node, "LayerNorm", [x, self.parameter(f"{path}.weight", module.weight),
                                          self.parameter(f"{path}.bias", module.bias)],
                      {"epsilon": module.eps})
        elif type(module) in _UNARY_MODULES:
            self.emit(node, _UNARY_MODULES[type(module)], [x])
        elif isinstance(module, torch.nn.Dropout):
            self.emit(node, "Dropout", [x], {"dropout_rate": module.p} if module.p else None)
        elif isinstance(module, torch.nn.Softmax):
            self.emit(node, "Softmax", [x], {"axis": module.dim if module.dim is not None else -1})
        elif isinstance(module, torch.nn.Identity):
            self.alias(node, node.args[0])
        elif isinstance(module, torch.nn.Flatten):
            self.emit(node, "Reshape", [x], {"new_shape": self.shape(node)})
        else:
            self.opaque(node, f"torch.nn.{type(module).__name__}")

    def on_call_function(self, node):
        target = node.target
        if target in _BINARY:
            self.binary(node, _BINARY[target])
        elif target in _MATMULS:
            self.matmul(node)
        elif target in _UNARY_FUNCTIONS and self.is_tensor(node.args[0]):
            self.emit(node, _UNARY_FUNCTIONS[target], [self.tensors[node.args[0]]])
        elif target in (F.softmax, torch.softmax):
            self.softmax(node)
        elif target is F.dropout:
            rate = node.kwargs.get("p", node.args[1] if len(node.args) > 1 else 0.5)
            self.emit(node, "Dropout", [self.tensors[node.args[0]]],
                      {"dropout_rate": rate} if rate else None)
        elif target is F.cross_entropy and self.plain_cross_entropy(node):
            self.emit(node, "CrossEntropy",
                      [self.tensors[node.args[0]], self.tensors[_loss_labels(node)]])
        elif target in _REDUCTIONS:
            self.reduction(node, _REDUCTIONS[target])
        elif target in (torch.reshape, torch.flatten, torch.squeeze, torch.unsqueeze):
            self.emit(node, "Reshape", [self.tensors[node.args[0]]],
                      {"new_shape": self.shape(node)})
        elif target is torch.cat:
            self.concat(node)
        elif target is torch.transpose:
            self.transpose(node, node.args[1], node.args[2])
        elif target is operator.getitem and node.args[0] in self.parts:
            self.tensors[node] = self.parts[node.args[0]][node.args[1]]
        elif target is operator.getitem and self.is_tensor(node.args[0]):
            self.getitem(node)
        else:
            self.opaque(node, getattr(target, "__qualname__", str(target)))

    def on_call_method(self, node):
        method = node.target
        source = node.args[0]
        if method in _RESHAPE_METHODS:
            self.emit(node, "Reshape", [self.tensors[source]], {"new_shape": self.shape(node)})
        elif method in _ALIAS_METHODS:
            self.alias(node, source)
        elif method == "transpose":
            self.transpose(node, node.args[1], node.args[2])
        elif method == "permute":
            dims = node.args[1] if isinstance(node.args[1], (list, tuple)) else node.args[1:]
            rank = len(self.shape(source))
            self.emit(node, "Transpose", [self.tensors[source]],
                      {"perm": [_axis(d, rank) for d in dims]})
        elif method in _BINARY_METHODS:
            self.binary(node, _BINARY_METHODS[method])
        elif method in _UNARY_METHODS:
            self.emit(node, _UNARY_METHODS[method], [self.tensors[source]])
        elif method == "softmax":
            self.softmax(node)
        elif method in _REDUCTION_METHODS:
            self.reduction(node, _REDUCTION_METHODS[method])
        elif method in _CASTS or method in ("to", "type_as"):
            self.cast(node, source)
        else:
            self.opaque(node, f"Tensor.{method}")

    # --- the kinds that need their arguments read ----------------------------------------------
    def binary(self, node, kind):
        a, b = node.args[0], node.args[1] if len(node.args) > 1 else node.kwargs.get("other")
        if self.is_tensor(a) and self.is_tensor(b):
            self.emit(node, kind, [self.tensors[a], self.tensors[b]])
        elif self.is_tensor(a):
            self.alias(node, a)  # arithmetic with a number: the tensor operand (module doc)
        elif self.is_tensor(b):
            self.alias(node, b)
        else:
            self.opaque(node, f"{kind} of non-tensors")

    @staticmethod
    def plain_cross_entropy(node):
        """The mean loss over integer class labels, which autopar's CrossEntropy is: no weights,
        label smoothing, ignore_index or reduction other than the mean."""
        labels = _loss_labels(node)
        plain = {"weight": None, "reduction": "mean", "label_smoothing": 0.0,
                 "ignore_index": -100}
        return (isinstance(labels, torch.fx.Node) and len(node.args) <= 2
                and all(node.kwargs.get(key, value) == value for key, value in plain.items()))

    def matmul(self, node):
        a, b = node.args[0], node.args[1]
        rank_a, rank_b = len(self.shape(a)), len(self.shape(b))
        if rank_b == 2 and rank_a >= 2:
            self.emit(node, "MatMul", [self.tensors[a], self.tensors[b]])
        elif rank_a >= 3 and rank_b >= 3 and \
                self.shape(b)[:-2] == self.shape(a)[rank_a - rank_b:-2]:
            self.emit(node, "BatchMatMul", [self.tensors[a], self.tensors[b]])
        else:
            self.opaque(node, "matmul of these ranks")

    def softmax(self, node):
        dim = node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else -1)
        self.emit(node, "Softmax", [self.tensors[node.args[0]]], {"axis": dim})

    def reduction(self, node, kind):
        source = node.args[0]
        rank = len(self.shape(source))
        dims = node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else None)
        if dims is None:
            dims = list(range(rank))
        elif isinstance(dims, int):
            dims = [dims]
        attrs = {"axes": [_axis(d, rank) for d in dims]}
        if node.kwargs.get("keepdim", node.args[2] if len(node.args) > 2 else False):
            attrs["keep_dims"] = True
        self.emit(node, kind, [self.tensors[source]], attrs)

    def concat(self, node):
        parts = node.args[0]
        dim = node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else 0)
        self.emit(node, "Concat", [self.tensors[p] for p in parts], {"axis": dim})

    def transpose(self, node, first, second):
        source = node.args[0]
        rank = len(self.shape(source))
        perm = list(range(rank))
        first, second = _axis(first, rank), _axis(second, rank)
        perm[first], perm[second] = perm[second], perm[first]
        self.emit(node, "Transpose", [self.tensors[source]], {"perm": perm})

    def getitem(self, node):
        source, index = node.args
        shape = self.shape(source)
        index = index if isinstance(index, tuple) else (index,)
        if len(index) > len(shape) or not all(isinstance(i, slice) and i.step in (None, 1)
                                              for i in index):
            self.opaque(node, "Tensor.__getitem__")
            return
        starts, ends = [], []
        out = self.shape(node)
        for dim, size in enumerate(shape):
            part = index[dim] if dim < len(index) else slice(None)
            if isinstance(part.start, torch.fx.Node):
                self.opaque(node, "Tensor.__getitem__")
                return
            # A stop traced as a node (x[:, :s] with s = x.size(1)): the output's extent says it.
            start = slice(part.start, None).indices(size)[0]
            end = start + out[dim] if isinstance(part.stop, torch.fx.Node) else \
                slice(start, part.stop).indices(size)[1]
            starts.append(start)
            ends.append(end)
        self.emit(node, "Slice", [self.tensors[source]], {"starts": starts, "ends": ends})

    def cast(self, node, source):
        target = _CASTS.get(node.target)
        out = self.meta(node).dtype
        if target is None and out == self.meta(source).dtype:
            self.alias(node, source)
        elif out == self.meta(source).dtype:
            self.alias(node, source)
        else:
            self.emit(node, "Cast", [self.tensors[source]], {"cast_to": _DTYPES.get(out, "fp32")})


def from_torch(module, example_inputs, name=None):
    """Traces `module` (an nn.Module) with torch.fx on `example_inputs` (a tensor or a tuple of
    them, one per forward argument) and returns the autopar Graph of one training step. The
    forward should end in the loss (F.cross_entropy) for the step's backward to be priced on it.
    """
    if not isinstance(module, torch.nn.Module):
        raise ValueError(f"module: expected a torch.nn.Module, got {type(module).__name__}")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    if not all(isinstance(x, torch.Tensor) for x in example_inputs):
        raise ValueError("example_inputs: expected a tensor or a tuple of tensors")
    tracer = _PathTracer()
    try:
        traced_graph = tracer.trace(module)
    except Exception as error:  # torch.fx raises TraceError, TypeError, ... on dynamic control
        raise ValueError(f"module: torch.fx cannot trace it: {error}") from error
    traced = torch.fx.GraphModule(tracer.root, traced_graph)
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        raise ValueError(f"example_inputs: forward takes {len(placeholders)} tensor(s), got "
                         f"{len(example_inputs)}")
    # One forward for the shapes, which must not change the module: its buffers (BatchNorm's
    # running statistics) are put back.
    saved = {key: buffer.clone() for key, buffer in module.named_buffers()}
    with torch.no_grad():
        ShapeProp(traced).propagate(*example_inputs)
        for key, buffer in module.named_buffers():
            buffer.copy_(saved[key])
    graph = Graph(name or type(module).__name__,
                  f"traced from {type(module).__module__}.{type(module).__name__} with torch.fx")
    _Converter(traced, module, graph).convert()
    if not graph.ops:
        raise ValueError("module: the traced forward has no op autopar can plan")
    return graph
