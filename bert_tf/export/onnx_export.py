"""The ids signature as an ONNX graph, for ONNX Runtime.

`onnx_model` converts an export's `serve_ids` (the function behind the
SavedModel's `serving_ids`: the model and the task's outputs) with
tf2onnx, which converts TensorFlow 2.20's graphs of every task, the CRF's
Viterbi decoding and the classifier's string `label` included (the label
names are also in `packing.json` beside the model; see
`bert_tf.export.portable`).

Inputs are int32 [batch, sequence] (multiple choice: [batch, choices,
sequence]) with named dynamic axes, so a caller may pad each batch only to
its longest input: a padded position (input_mask 0) changes no real
position's output, as in the runners.

`quantize_int8` is ONNX Runtime's dynamic quantization: the weights of
every MatMul by a weight matrix stored as int8 (per output channel), its
input quantized per call from its observed range; the attention's
activation-by-activation MatMuls (scores and their use), the embeddings,
LayerNorm and softmax stay float32, as in TFLite's dynamic-range
quantization.
"""

import contextlib
import gc
import os
import tempfile
import threading

import tensorflow as tf

# ONNX opset of the graphs (ONNX Runtime 1.16 and later run it).
OPSET = 17
# Names of the dynamic axes of the inputs, by input rank.
AXIS_NAMES = {2: ("batch", "sequence"), 3: ("batch", "choices", "sequence")}


def onnx_model(export, input_names, input_rank):
    """The ONNX graph of `export.serve_ids`.

    Args:
      export: one of `bert_tf.export.serving`'s exports.
      input_names: the ids signature's input names, in `serve_ids`'s order.
      input_rank: 2, or 3 for multiple choice.

    Returns:
      An `onnx.ModelProto` whose inputs are int32 with the dynamic axes of
      `AXIS_NAMES` and whose outputs are `serve_ids`'s.
    """
    import tf2onnx
    from onnx import numpy_helper

    specs = [tf.TensorSpec([None] * input_rank, tf.int32, name=name)
             for name in input_names]
    function = tf.function(export.serve_ids)
    with _collecting_garbage():
        model, _ = tf2onnx.convert.from_function(
            function, input_signature=specs, opset=OPSET)
    # tf2onnx freezes the variables but leaves other captured tensors (the
    # classifier's label names) as graph inputs: make them constants.
    concrete = function.get_concrete_function(*specs)
    captured = {internal.name: external for external, internal in zip(
        concrete.captured_inputs, concrete.graph.internal_captures)}
    for graph_input in list(model.graph.input):
        if graph_input.name in input_names:
            continue
        if graph_input.name not in captured:
            raise ValueError(f"the ONNX graph has an unknown input "
                             f"{graph_input.name}")
        value = captured[graph_input.name].numpy()
        model.graph.initializer.append(numpy_helper.from_array(
            value.astype(object) if value.dtype.kind in "OSU" else value,
            graph_input.name))
        model.graph.input.remove(graph_input)
    for graph_input in model.graph.input:
        dims = graph_input.type.tensor_type.shape.dim
        for dim, name in zip(dims, AXIS_NAMES[input_rank]):
            dim.dim_param = name
    model.producer_name = "bert_tf (tf2onnx)"
    return model


@contextlib.contextmanager
def _collecting_garbage(interval_seconds=0.5):
    """Runs Python's cyclic garbage collector every `interval_seconds`.

    tf2onnx's graph optimizer deep-copies the whole graph, weights
    included, before each of its passes; a discarded copy is a web of
    reference cycles, which only the cyclic collector frees, and that runs
    by object counts, not bytes. Left alone, the copies pile up: converting
    MiniLM (91 MB of weights) peaked at 5.9 GB resident, BERT-Base passed
    13 GB. Collecting every half second kept MiniLM's peak at 2.6 GB.
    """
    stop = threading.Event()

    def collect():
        while not stop.wait(interval_seconds):
            gc.collect()

    collector = threading.Thread(target=collect, daemon=True)
    collector.start()
    try:
        yield
    finally:
        stop.set()
        collector.join()


def quantize_int8(model, work_dir=None):
    """ONNX Runtime's dynamic int8 quantization of `model`.

    Args:
      model: an `onnx.ModelProto` (float32).
      work_dir: where the files ONNX Runtime reads and writes are (and are
        removed from), its own temporary copies of the model included;
        default: `$TMPDIR`.

    Returns:
      The quantized `onnx.ModelProto`: the weights of MatMuls by a constant
      int8 per output channel, their inputs quantized per call (uint8).
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    constants = {tensor.name for tensor in model.graph.initializer}
    constants.update(output for node in model.graph.node
                     if node.op_type == "Constant" for output in node.output)
    activation_matmuls = [
        node.name for node in model.graph.node if node.op_type == "MatMul"
        and not any(name in constants for name in node.input)]
    with tempfile.TemporaryDirectory(dir=work_dir) as directory, (
            _python_temporary_files_in(directory)):
        source = os.path.join(directory, "float32.onnx")
        target = os.path.join(directory, "int8.onnx")
        onnx.save(model, source)
        quantize_dynamic(source, target, weight_type=QuantType.QInt8,
                         per_channel=True, op_types_to_quantize=["MatMul"],
                         nodes_to_exclude=activation_matmuls)
        return onnx.load(target)


@contextlib.contextmanager
def _python_temporary_files_in(directory):
    """Python's `tempfile` creates its files in `directory` inside the
    block.

    ONNX Runtime's quantizer saves copies of the whole model through
    `tempfile` (for shape inference), with no argument to say where: they
    would go to `$TMPDIR` whatever the caller's `work_dir`. (`tempfile.
    tempdir` is process-wide; nothing else here creates temporary files
    meanwhile.)
    """
    previous = tempfile.tempdir
    tempfile.tempdir = directory
    try:
        yield
    finally:
        tempfile.tempdir = previous
