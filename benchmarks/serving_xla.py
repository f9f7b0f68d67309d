"""What `export_saved_model.py --enable_xla` costs and buys, per input shape.

A sentence classifier of the given shape (random weights, Google's uncased
vocabulary; BERT-Base by default, `--num_layers=6 --hidden_size=384
--num_attention_heads=12 --intermediate_size=1536` for MiniLM-L6) is
exported twice from one checkpoint, without and with `--enable_xla`; both
SavedModels are loaded in this process and their `serving_ids` is called
at each `--shapes` (batch x sequence length: what `serving_default` runs a
request at after packing it):

  first call    the first call at that shape: with XLA, the compilation of
                one program for it (each new (batch size, packed length)
                compiles once per loaded SavedModel); without, the
                graph's warm-up;
  p50           the median of `--calls` later calls, the two exports
                alternating call by call (a change of the machine's load
                favours neither).

The outputs of the two are compared (they must agree to float32
round-off). Every call's time goes into the run's record
(`benchmarks/records.py`). It asserts nothing about time.

    python benchmarks/serving_xla.py --num_layers=6 --hidden_size=384 \\
        --num_attention_heads=12 --intermediate_size=1536
"""

import argparse
import os
import tempfile
import time

import harness  # first: repository on sys.path, quiet TensorFlow

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401

VOCAB_FILE = harness.REPO_ROOT / "tests" / "golden" / "models" / (
    "uncased_vocab.txt")


def build_parser():
    """The benchmark's flags."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    harness.add_model_shape_arguments(parser)
    parser.add_argument("--seq_length", type=int, default=128,
                        help="the export's --max_seq_length")
    parser.add_argument("--shapes", default="1x16,1x32,1x128,32x32,32x128",
                        help="batch x length of each measured input")
    parser.add_argument("--calls", type=int, default=20,
                        help="timed calls per export and shape")
    harness.records.add_arguments(parser)
    return parser


def _exports(config, seq_length, work_dir):
    """{"plain": serving_ids, "XLA": serving_ids} of one random checkpoint
    exported without and with `enable_xla`, saved and loaded."""
    from bert_tf import checkpoints
    from bert_tf.export import serving
    from bert_tf.tasks.classification import export as classification_export
    from bert_tf.tasks.classification.task import ClassificationModel
    model = ClassificationModel(config, 2)
    prefix = os.path.join(work_dir, "model.ckpt")
    checkpoints.save_checkpoint(
        {checkpoints.variable_name(v): v for v in model.weights}, prefix)
    signatures = {}
    for name, enable_xla in (("plain", False), ("XLA", True)):
        export_dir = os.path.join(work_dir, name)
        serving.save_export(classification_export.classifier_export(
            config, str(VOCAB_FILE), True, prefix, seq_length, ["0", "1"],
            enable_xla=enable_xla), export_dir)
        signatures[name] = tf.saved_model.load(export_dir).signatures[
            serving.SERVING_IDS]
    return signatures


def main():
    parser = build_parser()
    args = parser.parse_args()
    if args.calls <= 0:
        parser.error("--calls must be positive")
    record = harness.records.Record("serving_xla", args)
    config = harness.bert_config(args)
    shapes = [tuple(int(n) for n in shape.split("x"))
              for shape in args.shapes.split(",")]
    with tempfile.TemporaryDirectory() as work_dir:
        start = time.time()
        signatures = _exports(config, args.seq_length, work_dir)
        print(f"exports built in {time.time() - start:.0f} s; "
              f"{args.num_layers} layers, hidden {args.hidden_size}; "
              f"{os.cpu_count()} CPUs, load average "
              f"{os.getloadavg()[0]:.1f} at the start")
        print(f"{'batch':>5} {'length':>6} {'export':<6} "
              f"{'first call s':>12} {'p50 ms':>9} {'p99 ms':>9}")
        rng = np.random.default_rng(0)
        for batch, length in shapes:
            inputs = {
                "input_ids": tf.constant(rng.integers(
                    1000, config.vocab_size, (batch, length)), tf.int32),
                "input_mask": tf.ones((batch, length), tf.int32),
                "segment_ids": tf.zeros((batch, length), tf.int32)}
            outputs, first = {}, {}
            for name, signature in signatures.items():
                begin = time.perf_counter()
                outputs[name] = signature(**inputs)["probabilities"].numpy()
                first[name] = time.perf_counter() - begin
            np.testing.assert_allclose(outputs["XLA"], outputs["plain"],
                                       atol=1e-5)
            times = {name: [] for name in signatures}
            for _ in range(args.calls):
                for name, signature in signatures.items():
                    begin = time.perf_counter()
                    signature(**inputs)["probabilities"].numpy()
                    times[name].append(time.perf_counter() - begin)
            for name in signatures:
                print(f"{batch:>5} {length:>6} {name:<6} "
                      f"{first[name]:>12.2f} "
                      f"{np.percentile(times[name], 50) * 1e3:>9.1f} "
                      f"{np.percentile(times[name], 99) * 1e3:>9.1f}")
            record.add(f"{batch}x{length}",
                       {name: [seconds * 1e3 for seconds in values]
                        for name, values in times.items()},
                       unit="ms", ratio=("XLA", "plain"),
                       details={"first_call_s": first,
                                "layers": args.num_layers,
                                "hidden_size": args.hidden_size})
            speedup = harness.ratio(np.median(times["plain"]),
                                    np.median(times["XLA"]))
            print(f"{batch:>5} {length:>6} p50 plain / XLA {speedup}; "
                  f"load average {os.getloadavg()[0]:.1f}")
    record.write()


if __name__ == "__main__":
    main()
