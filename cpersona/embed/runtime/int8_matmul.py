"""An int8-arithmetic copy of a graph whose MatMul weights are stored as int8: the query kernel's graph.

Some exports keep each MatMul weight as an int8 tensor ``W_q`` [K, N] with a float scale per output
column, and rebuild the float weight in the graph: ``MatMul(A, Mul(Cast(W_q), scale))``. ONNX
Runtime folds that into a float32 constant at load, so every query multiplies float32 matrices:
4x the bytes of the stored weights, read from memory for every recall.

``rewrite`` replaces each such MatMul with ONNX Runtime's ``MatMulNBits`` (contrib domain, 8 bits)
over the same int8 values, stored as ``W_q + 128`` with zero point 128, so the weight each
product uses is bit-for-bit the one the export stores. With ``accuracy_level`` 4 the kernel also
quantises the activations to int8 per block of ``block_size`` values along K and multiplies in
int8 (VNNI where the CPU has it): that is the one numeric change, and why the caller checks the
result against the float32 graph before using it (``query_kernel.py``).

Embedding tables stored the same way (``Gather(Mul(Cast(T_q), scale), ids)``) become
``Mul(Cast(Gather(T_q, ids)), Gather(scale, ids))``: the same values, but only the gathered rows are
made float, so the copy's session does not hold a second float32 table (47 MB for MiniLM's words).

Nothing else in the graph changes; a graph without int8 MatMul weights gives ``None``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Values per activation block the int8 kernel quantises together. Chosen on LoCoMo: docs/decisions.md.
BLOCK_SIZE = 64
#: MatMulNBits' "compute in int8" level (0 would dequantise to float32 per run: slower than the fold).
ACCURACY_LEVEL = 4
_ZERO_POINT = 128


@dataclass(frozen=True)
class Rewritten:
    """The rewritten graph (serialised), how many MatMuls it runs in int8 and how many tables it
    gathers from in int8."""

    model: bytes
    matmuls: int
    gathers: int = 0
    inputs: tuple[
        str, ...
    ] = ()  # the activation inputs of the rewritten products, in graph order (each once)


def rewrite(source: bytes | str, block_size: int = BLOCK_SIZE) -> Rewritten | None:
    """The graph at ``source`` (a path or the serialised model) with its int8-weight MatMuls run by
    ``MatMulNBits``; ``None`` when it has none. Raises ImportError without the ``onnx`` package."""
    from onnx import helper, numpy_helper

    edit = GraphEdit.of(source)
    for product in edit.products():
        packed, scales, zero_points = _pack(product.weights, product.scale, block_size)
        base = product.name
        edit.added += [
            numpy_helper.from_array(packed, f"{base}.nbits"),
            numpy_helper.from_array(scales, f"{base}.nbits_scales"),
            numpy_helper.from_array(zero_points, f"{base}.nbits_zero_points"),
        ]
        k, n = product.weights.shape
        for matmul in product.matmuls:
            edit.replaced[id(matmul)] = helper.make_node(
                "MatMulNBits",
                [matmul.input[0], f"{base}.nbits", f"{base}.nbits_scales", f"{base}.nbits_zero_points"],
                list(matmul.output),
                name=f"{matmul.name}.nbits",
                domain="com.microsoft",
                K=k,
                N=n,
                bits=8,
                block_size=block_size,
                accuracy_level=ACCURACY_LEVEL,
            )
        edit.drop(product)
    return edit.finish()


@dataclass(frozen=True)
class Product:
    """One stored int8 weight (``W_q``, [K, N]) with its per-column (or single) scale, and the MatMuls
    reading it as ``Mul(Cast(W_q), scale)``."""

    cast: Any
    mul: Any
    matmuls: list[Any]
    scale_name: str
    weights: np.ndarray
    scale: np.ndarray

    @property
    def name(self) -> str:
        """The int8 initializer's name (new initializers are named after it)."""
        return str(self.cast.input[0])


@dataclass
class GraphEdit:
    """A rewrite of one graph in progress: nodes replaced (keyed by ``id``), nodes and initializers
    dropped, initializers added; ``finish`` applies it and gathers int8 tables too."""

    model: Any
    initializers: dict[str, Any]
    consumers: dict[str, list[Any]]
    replaced: dict[int, Any] = field(default_factory=dict)
    dropped_nodes: set[int] = field(default_factory=set)
    dropped_inits: set[str] = field(default_factory=set)
    added: list[Any] = field(default_factory=list)
    matmuls: list[Any] = field(default_factory=list)  # of every product found, in graph order

    @classmethod
    def of(cls, source: bytes | str) -> GraphEdit:
        """An edit of the graph at ``source`` (a path or the serialised model)."""
        model = load_graph(source)
        initializers, consumers = index_graph(model.graph)
        return cls(model, initializers, consumers)

    def products(self) -> Iterator[Product]:
        """Every int8-weight product of the graph, in graph order."""
        from onnx import numpy_helper

        for cast in self.model.graph.node:
            found = weight_pattern(cast, self.initializers, self.consumers)
            if found is not None:
                mul, matmuls, scale_name = found
                weights = numpy_helper.to_array(self.initializers[cast.input[0]])
                scale = numpy_helper.to_array(self.initializers[scale_name]).astype(np.float32)
                self.matmuls += matmuls
                yield Product(cast, mul, matmuls, scale_name, weights, scale)

    def drop(self, product: Product) -> None:
        """Drop the product's dequantisation (its MatMuls are replaced) and its initializers."""
        self.dropped_nodes.update((id(product.cast), id(product.mul)))
        self.dropped_inits.add(product.name)
        if len(self.consumers[product.scale_name]) == 1:
            self.dropped_inits.add(product.scale_name)

    def finish(self) -> Rewritten | None:
        """The edited graph, int8 tables gathered in int8; None when no product was replaced."""
        if not self.replaced:
            return None
        products = len(self.replaced)
        gathers = gather_tables(
            self.model.graph, self.initializers, self.consumers, self.replaced, self.dropped_nodes
        )
        inputs = tuple(dict.fromkeys(m.input[0] for m in self.matmuls))
        splice(self.model, self.replaced, self.dropped_nodes, self.dropped_inits, self.added)
        return Rewritten(self.model.SerializeToString(), products, gathers, inputs)


def gather_tables(
    graph: Any,
    initializers: dict[str, Any],
    consumers: dict[str, list[Any]],
    replaced: dict[int, Any],
    dropped_nodes: set[int],
) -> int:
    """Add to ``replaced`` / ``dropped_nodes`` the int8 gathers of every table stored as int8 (see the module
    docstring) that no earlier rewrite has taken; returns how many."""
    from onnx import TensorProto, helper

    gathers = 0
    for cast in graph.node:
        if id(cast) in dropped_nodes:
            continue
        table = _table_pattern(cast, initializers, consumers)
        if table is None:
            continue
        mul, gather, scale_name = table
        base = str(gather.name or cast.input[0])
        rows, row_scales = f"{base}.int8_rows", f"{base}.row_scales"
        replaced[id(gather)] = [
            helper.make_node("Gather", [cast.input[0], gather.input[1]], [rows], axis=0, name=rows),
            helper.make_node("Gather", [scale_name, gather.input[1]], [row_scales], axis=0, name=row_scales),
            helper.make_node("Cast", [rows], [f"{rows}.float"], to=TensorProto.FLOAT, name=f"{rows}.cast"),
            helper.make_node(
                "Mul", [f"{rows}.float", row_scales], list(gather.output), name=f"{rows}.scaled"
            ),
        ]
        dropped_nodes.update((id(cast), id(mul)))
        gathers += 1
    return gathers


def load_graph(source: bytes | str) -> Any:
    """The ONNX model at ``source`` (a path or the serialised model), external weights not read: only int8
    initializers stored in the graph qualify for a rewrite. Raises ImportError without ``onnx``."""
    import onnx

    if isinstance(source, bytes):
        return onnx.load_model_from_string(source)
    return onnx.load(source, load_external_data=False)


def index_graph(graph: Any) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """(initializers by name, the nodes consuming each value name) of ``graph``."""
    initializers = {init.name: init for init in graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    return initializers, consumers


def splice(
    model: Any,
    replaced: dict[int, Any],
    dropped_nodes: set[int],
    dropped_inits: set[str],
    added: list[Any],
) -> None:
    """Edit ``model`` in place: each node keyed (by ``id``) in ``replaced`` becomes its node or list of nodes,
    ``dropped_nodes`` and ``dropped_inits`` go, ``added`` initializers come; the contrib domain is declared."""
    from onnx import helper

    graph = model.graph
    nodes: list[Any] = []
    for node in graph.node:
        if id(node) in dropped_nodes:
            continue
        new = replaced.get(id(node), node)
        nodes.extend(new if isinstance(new, list) else [new])
    kept = [init for init in graph.initializer if init.name not in dropped_inits]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + added)
    if not any(opset.domain == "com.microsoft" for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))


def _dequantised(
    cast: Any, initializers: dict[str, Any], consumers: dict[str, list[Any]]
) -> tuple[Any, Any, Any] | None:
    """(the int8 initializer, the Mul, the scale initializer) when ``cast`` starts ``Mul(Cast(W_q), s)``
    with ``W_q`` a 2-D int8 tensor and ``s`` a float one, both stored in the graph and used only there."""
    from onnx import TensorProto

    if cast.op_type != "Cast" or cast.input[0] not in initializers:
        return None
    weight = initializers[cast.input[0]]
    if weight.data_type != TensorProto.INT8 or len(weight.dims) != 2:
        return None
    users = consumers.get(cast.output[0], [])
    if len(consumers.get(cast.input[0], ())) != 1 or len(users) != 1 or users[0].op_type != "Mul":
        return None
    mul = users[0]
    others = [name for name in mul.input if name != cast.output[0]]
    if len(others) != 1 or others[0] not in initializers:
        return None
    scale = initializers[others[0]]
    if scale.data_type != TensorProto.FLOAT:
        return None
    if TensorProto.EXTERNAL in (weight.data_location, scale.data_location):
        return None
    return weight, mul, scale


def weight_pattern(
    cast: Any, initializers: dict[str, Any], consumers: dict[str, list[Any]]
) -> tuple[Any, list[Any], str] | None:
    """(the Mul, its MatMuls, the scale's name) when ``cast`` starts ``MatMul(A, Mul(Cast(W_q), s))``
    with one scale per output column (or one for all)."""
    found = _dequantised(cast, initializers, consumers)
    if found is None:
        return None
    weight, mul, scale = found
    n = weight.dims[1]
    if list(scale.dims) not in ([], [1], [n], [1, n]):
        return None
    matmuls = consumers.get(mul.output[0], [])
    if not matmuls or any(m.op_type != "MatMul" or list(m.input)[1:] != [mul.output[0]] for m in matmuls):
        return None
    return mul, matmuls, scale.name


def _table_pattern(
    cast: Any, initializers: dict[str, Any], consumers: dict[str, list[Any]]
) -> tuple[Any, Any, str] | None:
    """(the Mul, its Gather, the per-row scale's name) when ``cast`` starts
    ``Gather(Mul(Cast(T_q), s), ids)`` along axis 0 with one scale per row."""
    from onnx import helper

    found = _dequantised(cast, initializers, consumers)
    if found is None:
        return None
    table, mul, scale = found
    if list(scale.dims) != [table.dims[0], 1] or len(consumers.get(scale.name, ())) != 1:
        return None
    gathers = consumers.get(mul.output[0], [])
    if len(gathers) != 1 or gathers[0].op_type != "Gather" or list(gathers[0].input)[:1] != [mul.output[0]]:
        return None
    axis = next((helper.get_attribute_value(a) for a in gathers[0].attribute if a.name == "axis"), 0)
    if axis != 0:
        return None
    return mul, gathers[0], scale.name


def _pack(
    weights: np.ndarray, scale: np.ndarray, block_size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MatMulNBits' inputs for int8 ``weights`` [K, N] with per-column (or one) ``scale``:
    [N, blocks, block_size] uint8 values (``W_q + 128``, K padded with zeros), [N * blocks] scales
    and [N * blocks] zero points (128)."""
    k, n = weights.shape
    blocks = -(-k // block_size)
    shifted = np.full((blocks * block_size, n), _ZERO_POINT, dtype=np.uint8)
    shifted[:k] = (weights.astype(np.int16) + _ZERO_POINT).astype(np.uint8)
    packed = np.ascontiguousarray(shifted.T.reshape(n, blocks, block_size))
    per_column = np.broadcast_to(scale.reshape(-1), (n,)).astype(np.float32)
    scales = np.repeat(per_column, blocks).astype(np.float32)
    zero_points = np.full((n * blocks,), _ZERO_POINT, dtype=np.uint8)
    return packed, scales, zero_points
