"""The GPU check: numbers, pretraining and fine-tuning speed, in one table.

Meant for the first few minutes of a session that is lent an accelerator
(one H100/H200: under 8 minutes in all, untested on a GPU so far), and run
on CPUs with tiny shapes by `--smoke` (a test runs that, so the script
cannot rot). Three parts, each printing its table as soon as it is done:

1. numbers: `extract_features` on the golden checkpoint
   (`tests/golden/models/cased_tiny`) against Google's own output
   (`tests/golden/extract_features/expected_output.jsonl.gz`), with TF32
   off and on (`tf.config.experimental.enable_tensor_float_32_execution`):
   the largest absolute difference of each against the 1e-5 contract; and,
   since that checkpoint is tiny (hidden 32), the largest difference
   between TF32 and float32 outputs of a BERT-Base encoder.
2. pretraining: one training step of BERT-Base (sequence 128 and 512) and
   BERT-Large (sequence 128) with the masked-LM and next-sentence heads,
   float32 / mixed_bfloat16 / mixed_float16, XLA off and on; sequences/s
   and model FLOP utilization (MFU: matmul FLOPs of forward and backward,
   3x the forward's, over `--peak_tflops`; H100/H200 SXM dense bf16 is 989
   TFLOP/s, the figure used for every dtype) for bert_tf's `Trainer` and,
   side by side in the same process, Model Garden's `BertPretrainerV2`
   (`benchmarks/pretraining.py` builds both).
3. fine-tuning: classifier (sequence 128) and SQuAD (sequence 384)
   training throughput, bert_tf and Model Garden (`finetune.py`,
   `squad.py`), float32 and mixed_bfloat16 with XLA.

float32 rows run with TF32 off (the runners' default; `--allow_tf32` turns
it on for parts 2 and 3). Each timing is one call of 10 steps (2 with
`--smoke`) after an untimed call (tracing, compilation), the two
implementations alternating for 3 rounds (1 with `--smoke`), the median
reported; every round goes into the run's record under
`benchmarks/results/` (`benchmarks/records.py`; `--smoke` records nothing).
Rows run most important first (mixed_bfloat16
with XLA, then the original's float32) and none starts after `--budget_s`
(default 330 s; later ones show as "skipped"), so the whole run stays
under 8 minutes whatever the compile times. Nothing is asserted about time.

    bash benchmarks/gpu_suite.sh            # on the GPU machine
    bash benchmarks/gpu_suite.sh --smoke    # anywhere, seconds of tiny work
"""

import argparse
import gc
import gzip
import json
import os
import tempfile
import time

import harness  # first: puts the repository on the path, quiets TF logging

import numpy as np
import tensorflow as tf

import finetune
import pretraining
import squad

GOLDEN_DIR = harness.REPO_ROOT / "tests" / "golden"
# Dense bf16 peak of one H100 / H200 SXM (NVIDIA's datasheet), TFLOP/s.
H100_BF16_DENSE_TFLOPS = 989.0
# NVIDIA's published TF2 BERT-Large figures on one A100-80GB with AMP.
NVIDIA_A100_PHASE1 = 485.6   # sequences/s, sequence 128
NVIDIA_A100_PHASE2 = 96.5    # sequences/s, sequence 512
CONTRACT_TOLERANCE = 1e-5
# Google's max_predictions_per_seq for its two pretraining phases.
GOOGLE_PREDICTIONS = {128: 20, 512: 80}

BERT_BASE = dict(num_layers=12, hidden_size=768, num_attention_heads=12,
                 intermediate_size=3072, vocab_size=harness.BERT_VOCAB_SIZE)
BERT_LARGE = dict(num_layers=24, hidden_size=1024, num_attention_heads=16,
                  intermediate_size=4096, vocab_size=harness.BERT_VOCAB_SIZE)
TINY = dict(num_layers=2, hidden_size=32, num_attention_heads=2,
            intermediate_size=64, vocab_size=2000)
TINY_LARGER = dict(num_layers=3, hidden_size=48, num_attention_heads=3,
                   intermediate_size=96, vocab_size=2000)


ALL_PRECISIONS = [(dtype, enable_xla) for dtype in harness.DTYPES
                  for enable_xla in (False, True)]
# What matters most runs first, so that a --budget_s cut leaves it in.
FAST_PRECISION = ("mixed_bfloat16", True)
ORIGINAL_PRECISION = ("float32", False)


def suite_plan(smoke):
    """The configurations of parts 2 and 3, in table order.

    Full: every shape with every dtype and XLA mode (pretraining), and
    mixed_bfloat16 with XLA / float32 without (fine-tuning); mixed_bfloat16
    + XLA (the figures to hold against NVIDIA's) first, then the
    original's float32, then the rest (`run_tables` runs them in that
    priority across tables). Smoke: tiny shapes, each dtype and each XLA
    mode once (every code path).

    Returns:
      A dict: `pretraining` and `finetuning`, lists of
      (name, shape, seq_length, batch, dtype, enable_xla), and `steps`,
      `rounds`.
    """
    if smoke:
        return dict(
            pretraining=[("tiny-128", TINY, 16, 2, "float32", False),
                         ("tiny-512", TINY, 32, 2, "mixed_float16", True),
                         ("tiny-large-128", TINY_LARGER, 16, 2,
                          "mixed_bfloat16", False)],
            finetuning=[("classifier", TINY, 16, 2, "float32", False),
                        ("squad", TINY, 32, 2, "mixed_bfloat16", True)],
            steps=2, rounds=1)
    pretraining_shapes = [("base-128", BERT_BASE, 128, 64),
                          ("large-128", BERT_LARGE, 128, 64),
                          ("base-512", BERT_BASE, 512, 16)]
    finetuning_shapes = [("classifier", BERT_BASE, 128, 32),
                         ("squad", BERT_BASE, 384, 32)]

    def ordered(shapes, precisions):
        first = [FAST_PRECISION, ORIGINAL_PRECISION]
        rest = [p for p in precisions if p not in first]
        return [shape + precision for precision in first + rest
                if precision in precisions for shape in shapes]

    return dict(
        pretraining=ordered(pretraining_shapes, ALL_PRECISIONS),
        finetuning=ordered(finetuning_shapes,
                           [FAST_PRECISION, ORIGINAL_PRECISION]),
        steps=10, rounds=harness.records.MIN_HEADLINE_ROUNDS)


def release_memory():
    """Drops both Keras versions' global state between configurations."""
    import keras
    import tf_keras
    keras.backend.clear_session()
    tf_keras.backend.clear_session()
    gc.collect()


def print_table(title, header, rows):
    """Prints `rows` under `header`, columns right-aligned."""
    padded = [list(map(str, row)) + [""] * (len(header) - len(row))
              for row in [header] + rows]
    widths = [max(len(row[column]) for row in padded)
              for column in range(len(header))]
    print(f"\n{title}")
    for row in padded:
        print("  ".join(cell.rjust(width) for cell, width in zip(row, widths)))
    print(flush=True)


# -- 1. numbers -----------------------------------------------------------

def max_difference_from_golden(output_file):
    """Largest |ours - Google's| over every value of every layer and token.

    Raises:
      AssertionError: the files disagree on anything but the values (line
        count, tokens, layer indexes).
    """
    path = GOLDEN_DIR / "extract_features" / "expected_output.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as reader:
        expected = [json.loads(line) for line in reader]
    with open(output_file, encoding="utf-8") as reader:
        actual = [json.loads(line) for line in reader]
    assert len(actual) == len(expected), (len(actual), len(expected))
    worst = 0.0
    for got, want in zip(actual, expected):
        assert ([f["token"] for f in got["features"]]
                == [f["token"] for f in want["features"]])
        for got_token, want_token in zip(got["features"], want["features"]):
            for got_layer, want_layer in zip(got_token["layers"],
                                             want_token["layers"]):
                assert got_layer["index"] == want_layer["index"]
                worst = max(worst, float(np.max(np.abs(
                    np.asarray(got_layer["values"])
                    - np.asarray(want_layer["values"])))))
    return worst


def numbers_part(work):
    """extract_features vs Google's output, TF32 off and on."""
    from bert_tf.features import extract_features
    from bert_tf.training import precision

    model_dir = GOLDEN_DIR / "models" / "cased_tiny"
    rows = []
    for allow_tf32 in (False, True):
        precision.set_tensor_float_32(allow_tf32)
        output_file = os.path.join(work, f"features_tf32_{allow_tf32}.jsonl")
        extract_features(
            input_file=GOLDEN_DIR / "extract_features" / "input.txt",
            output_file=output_file,
            bert_config_file=model_dir / "bert_config.json",
            init_checkpoint=model_dir / "bert_model.ckpt",
            vocab_file=model_dir / "vocab.txt", layers="-1,-2",
            max_seq_length=48, do_lower_case=False, batch_size=4)
        worst = max_difference_from_golden(output_file)
        rows.append(["on" if allow_tf32 else "off", f"{worst:.2e}",
                     "yes" if worst <= CONTRACT_TOLERANCE else "NO"])
        release_memory()
    precision.set_tensor_float_32(False)
    print_table("extract_features (golden checkpoint) vs Google's output",
                ["TF32", "max |diff|", f"<= {CONTRACT_TOLERANCE:g}"], rows)
    return rows


def tf32_drift_part(shape, seq_length, batch_size):
    """max |TF32 - float32| of a BERT encoder of `shape` (random weights).

    The golden checkpoint is tiny (hidden 32), which understates what TF32
    does to a real model's sums over 768 or 1024 terms: here one encoder of
    the given shape encodes the same batch with TF32 off and on, and the
    largest difference of the last layer's output (LayerNorm-scaled, so
    values of order 1) is reported against the 1e-5 contract.
    """
    from bert_tf.modeling import BertModel
    from bert_tf.training import precision

    config = harness.bert_config(argparse.Namespace(
        **shape, seq_length=seq_length))
    model = BertModel(config)
    ids = tf.constant(np.random.RandomState(0).randint(
        1000, config.vocab_size, (batch_size, seq_length)), tf.int32)
    outputs = []
    for allow_tf32 in (False, True):
        precision.set_tensor_float_32(allow_tf32)
        # A new function per setting: a traced kernel keeps its math mode.
        encode = tf.function(lambda: model(ids)["sequence_output"])
        outputs.append(encode().numpy())
    precision.set_tensor_float_32(False)
    drift = float(np.max(np.abs(outputs[1] - outputs[0])))
    rows = [[f"{shape['num_layers']} layers, hidden {shape['hidden_size']}, "
             f"seq {seq_length}", f"{drift:.2e}",
             "yes" if drift <= CONTRACT_TOLERANCE else "NO"]]
    print_table("TF32 against float32 on a full-size encoder (random "
                "weights)", ["encoder", "max |TF32 - fp32|",
                             f"<= {CONTRACT_TOLERANCE:g}"], rows)
    del model
    release_memory()
    return rows


# -- 2. pretraining ---------------------------------------------------------

PRETRAINING_HEADER = ["model", "dtype", "XLA", "bert_tf seq/s", "bert_tf MFU",
                      "MG seq/s", "MG MFU", "bert_tf/MG"]


def _record_row(record, entry, rounds, examples):
    """Adds a row's per-round examples/s to `record` (None: no record)."""
    if record is None:
        return
    name, shape, seq_length, batch_size, dtype, enable_xla = entry
    contenders = {contender: [examples / seconds for seconds in times]
                  for contender, times in zip(("bert_tf", "model garden"),
                                              rounds)}
    record.add(" ".join(_row_label(entry)), contenders, unit="examples/s",
               lower_is_better=False,
               ratio=(("bert_tf", "model garden") if len(contenders) == 2
                      else None),
               details={"shape": shape, "seq_length": seq_length,
                        "batch_size": batch_size, "dtype": dtype,
                        "enable_xla": enable_xla})


def pretraining_row(entry, plan, peak_flops, skip_model_garden, record=None):
    """Sequences/s and MFU of both pretrainers for one configuration."""
    name, shape, seq_length, batch_size, dtype, enable_xla = entry
    args = argparse.Namespace(
        **shape, seq_length=seq_length, batch_size=batch_size,
        num_predictions=GOOGLE_PREDICTIONS.get(
            seq_length, max(1, round(seq_length * 0.15))),
        steps_per_call=plan["steps"], dtype=dtype, enable_xla=enable_xla)
    batch = pretraining.synthetic_batch(
        batch_size, seq_length, args.num_predictions, args.vocab_size)
    contenders = [pretraining.bert_tf_pretraining(args, batch)[0]]
    if not skip_model_garden:
        contenders.append(
            pretraining.model_garden_pretraining(args, batch)[0])
    rounds = harness.seconds_interleaved(contenders, plan["rounds"])
    _record_row(record, entry, rounds, plan["steps"] * batch_size)
    times = [harness.median(times) for times in rounds]
    step_flops = 3 * pretraining.forward_flops(args)
    cells = []
    for seconds in times:
        per_step = seconds / plan["steps"]
        cells += [f"{batch_size / per_step:.1f}",
                  f"{step_flops / per_step / peak_flops:.1%}"]
    if skip_model_garden:
        cells += ["-", "-", "-"]
    else:
        cells.append(harness.ratio(times[1], times[0]))
    return cells


# -- 3. fine-tuning -----------------------------------------------------------

FINETUNING_HEADER = ["task", "dtype", "XLA", "bert_tf ex/s", "MG ex/s",
                     "bert_tf/MG"]


def finetuning_row(entry, plan, work, skip_model_garden, record=None):
    """Examples/s of classifier or SQuAD training, both implementations."""
    name, shape, seq_length, batch_size, dtype, enable_xla = entry
    args = argparse.Namespace(
        **shape, seq_length=seq_length, batch_size=batch_size,
        steps=plan["steps"], dtype=dtype, enable_xla=enable_xla)
    config = harness.bert_config(args)
    directory = tempfile.mkdtemp(dir=work)
    record_file = os.path.join(directory, "train.tf_record")
    module = finetune if name == "classifier" else squad
    module.write_records(record_file, 4 * batch_size, seq_length,
                         config.vocab_size)
    # finetune.py and squad.py build their contenders alike.
    contenders = [module.bert_tf_training(config, record_file, args,
                                          directory)]
    if not skip_model_garden:
        contenders.append(module.model_garden_training(
            config, record_file, args))
    rounds = harness.seconds_interleaved(contenders, plan["rounds"])
    examples = plan["steps"] * batch_size
    _record_row(record, entry, rounds, examples)
    times = [harness.median(times) for times in rounds]
    cells = [f"{examples / seconds:.1f}" for seconds in times]
    if skip_model_garden:
        cells += ["-", "-"]
    else:
        cells.append(harness.ratio(times[1], times[0]))
    return cells


def _row_label(entry):
    name, _, seq_length, _, dtype, enable_xla = entry
    return [name if name[-1].isdigit() else f"{name}-{seq_length}", dtype,
            "on" if enable_xla else "off"]


def _priority(precision):
    """0 for mixed_bfloat16 + XLA, 1 for the original's float32, then 2."""
    for rank, first in enumerate((FAST_PRECISION, ORIGINAL_PRECISION)):
        if precision == first:
            return rank
    return 2


def run_tables(tables, deadline):
    """Runs every table's rows, most important first, while time is left.

    Rows of all tables run in one order: mixed_bfloat16 with XLA first,
    then the original's float32, then the rest (pretraining before
    fine-tuning within each), so a budget cut keeps the rows that matter
    in every table. Each row prints as it finishes; one that could not
    start before `deadline` (a `time.perf_counter()` value) shows as
    "skipped". Then each table prints in its own order.

    Args:
      tables: a list of (title, header, entries, make_row); `make_row(entry)`
        returns the row's cells after its label.
      deadline: when to stop starting rows.

    Returns:
      A list, per table, of its rows (lists of cells).
    """
    jobs = sorted(
        ((table, index) for table, (_, _, entries, _) in enumerate(tables)
         for index in range(len(entries))),
        key=lambda job: (_priority(tables[job[0]][2][job[1]][4:]), job[0]))
    cells = {}
    for table, index in jobs:
        entry = tables[table][2][index]
        if time.perf_counter() > deadline:
            cells[table, index] = ["skipped"]
            continue
        cells[table, index] = tables[table][3](entry)
        print("  " + " ".join(_row_label(entry) + cells[table, index])
              + f"  (batch {entry[3]})", flush=True)
        release_memory()
    all_rows = []
    for table, (title, header, entries, _) in enumerate(tables):
        rows = [_row_label(entry) + cells[table, index]
                for index, entry in enumerate(entries)]
        print_table(title, header, rows)
        all_rows.append(rows)
    return all_rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="tiny shapes, 2 steps: checks that every part "
                             "runs (on CPUs too); its numbers mean nothing")
    parser.add_argument("--parts", default="numbers,pretraining,finetuning",
                        help="comma-separated subset of numbers, "
                             "pretraining, finetuning")
    parser.add_argument("--dtypes", default=",".join(harness.DTYPES),
                        help="pretraining dtypes (comma-separated)")
    parser.add_argument("--xla", default="off,on",
                        help="pretraining XLA modes: off, on or off,on")
    parser.add_argument("--peak_tflops", type=float,
                        default=H100_BF16_DENSE_TFLOPS,
                        help="the device's peak for MFU (default: H100/H200 "
                             "SXM dense bf16)")
    parser.add_argument("--allow_tf32", action="store_true",
                        help="TF32 on for the speed parts (float32 rows)")
    parser.add_argument("--budget_s", type=float, default=330,
                        help="start no new row after this many seconds "
                             "(the rest show as skipped); the most "
                             "important rows run first")
    parser.add_argument("--skip_model_garden", action="store_true")
    harness.records.add_arguments(parser)
    args = parser.parse_args()

    parts = [part for part in args.parts.split(",") if part]
    unknown = set(parts) - {"numbers", "pretraining", "finetuning"}
    dtypes = [d for d in args.dtypes.split(",") if d]
    xla_names = [x for x in args.xla.split(",") if x]
    if unknown:
        parser.error(f"--parts: unknown {', '.join(sorted(unknown))}")
    if set(dtypes) - set(harness.DTYPES):
        parser.error(f"--dtypes: each of {', '.join(harness.DTYPES)}")
    if set(xla_names) - {"off", "on"}:
        parser.error("--xla: off, on or off,on")
    xla_modes = [name == "on" for name in xla_names]

    plan = suite_plan(args.smoke)
    # The smoke run's tiny numbers mean nothing: no record, no load check.
    record = None if args.smoke else harness.records.Record("gpu_suite", args)
    pretraining_entries = [e for e in plan["pretraining"]
                           if e[4] in dtypes and e[5] in xla_modes]
    gpus = tf.config.list_physical_devices("GPU")
    device = (tf.config.experimental.get_device_details(gpus[0]).get(
        "device_name", "GPU") if gpus else "CPU only")
    print(f"gpu_suite{' --smoke' if args.smoke else ''}: {device}, "
          f"TF {tf.__version__}; TF32 for speed parts: "
          f"{'on' if args.allow_tf32 else 'off'}; budget {args.budget_s} s",
          flush=True)
    started = time.perf_counter()
    deadline = started + args.budget_s
    peak_flops = args.peak_tflops * 1e12
    with tempfile.TemporaryDirectory(prefix="gpu_suite_") as work:
        if "numbers" in parts:
            numbers_part(work)
            if args.smoke:
                tf32_drift_part(TINY, 16, 2)
            else:
                tf32_drift_part(BERT_BASE, 128, 8)
        from bert_tf.training import precision
        precision.set_tensor_float_32(args.allow_tf32)
        tables = []
        if "pretraining" in parts:
            tables.append((
                f"pretraining, {plan['steps']} steps a call (MFU against "
                f"{args.peak_tflops:g} TFLOP/s; NVIDIA's TF2 BERT-Large on "
                f"one A100-80GB with AMP: {NVIDIA_A100_PHASE1} seq/s at "
                f"128, {NVIDIA_A100_PHASE2} at 512)",
                PRETRAINING_HEADER, pretraining_entries,
                lambda entry: pretraining_row(entry, plan, peak_flops,
                                              args.skip_model_garden,
                                              record)))
        if "finetuning" in parts:
            tables.append((
                f"fine-tuning, {plan['steps']} steps a call",
                FINETUNING_HEADER, plan["finetuning"],
                lambda entry: finetuning_row(entry, plan, work,
                                             args.skip_model_garden,
                                             record)))
        run_tables(tables, deadline)
    if record is not None:
        record.write()
    print(f"gpu_suite done in {time.perf_counter() - started:.0f} s",
          flush=True)


if __name__ == "__main__":
    main()
