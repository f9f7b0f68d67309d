"""The GPU check without TensorFlow: the trainer's JAX training step, timed.

`bash benchmarks/gpu_suite.sh --backend=jax` runs this file with
`KERAS_BACKEND=jax`. It imports no TensorFlow at all (only keras, jax,
numpy, absl and bert_tf's JAX engine, optimizer and pretraining task, which
import TensorFlow only to read files or take `tf.distribute` objects), so
it runs on a machine that has JAX with CUDA and no TensorFlow (the GPU
machines lent to this project; see benchmarks/README_gpu_jax.md for the
wheels).

One row per (model, sequence length, dtype, attention): the step
`run_pretraining.py` runs on JAX, i.e. `JaxEngine.train_steps` of
`bert_tf.training.engines.jax_engine` (the same engine the `Trainer`
builds) on `bert_tf.pretraining.task.PretrainingTask` (its model: BERT with
the masked-LM and next-sentence heads; its loss: Google's, in `keras.ops`)
with Google's optimizer (`optimization.create_optimizer("adamw", ...)`:
AdamWeightDecay, clipping by global norm 1.0, Google's learning-rate
schedule), dropout as Google's from the engine's seeded generator,
attention as `--attention` sets it (`TrainerConfig.attention`). The
batches are synthetic numpy arrays, as a run's tf.data pipeline hands its
records to the engine (each step's call copies its batch to the device).
The first call compiles the step (`jax.jit` of the whole step: forward,
backward, clipping, update; its state donated, so the weights and the
optimizer's slots are held once); then `--steps` steps run in one
`train_steps` call, as the trainer runs them (each step's loss read once
the next step is queued; the call returns when the last has ended).
Printed: sequences per second, step time, and model
FLOP utilization (MFU: the matmul FLOPs of forward and backward, 3x the
forward's, as benchmarks/pretraining.py counts them, over `--peak_tflops`,
default 989: H100/H200 SXM dense bf16), with NVIDIA's published TF2
BERT-Large figures on one A100-80GB (AMP) beside: 485.6 sequences/s at
sequence 128, 96.5 at 512.

"fused" rows run what `--attention=fused` runs:
`keras.ops.dot_product_attention` (JAX's cuDNN flash attention on a GPU in
bf16; Keras falls back to the unfused XLA form where there is none). That
op has no attention-probability dropout, so fused rows run with
`attention_probs_dropout_prob` 0 (hidden dropout kept), as a user's
config must have it to train so: say so beside any figure taken from
them.

Rows run most important first (bf16 fused, bf16 Google's attention, then
float32) and none starts after `--budget_s`; the record (every row, the
device, the settings) is also written as JSON to `--record_file`.

    bash benchmarks/gpu_suite.sh --backend=jax            # on the GPU
    bash benchmarks/gpu_suite.sh --backend=jax --smoke    # CPUs, tiny shapes
"""

import itertools
import json
import os
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
# The repository, for bert_tf (this file runs as a script from anywhere).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402

from bert_tf.config import BertConfig  # noqa: E402
from bert_tf.pretraining import task as pretraining  # noqa: E402
from bert_tf.training import optimization  # noqa: E402
from bert_tf.training.engines import jax_engine  # noqa: E402
from bert_tf.training.trainer_config import TrainerConfig  # noqa: E402

# Dense bf16 peak of one H100 / H200 SXM (NVIDIA's datasheet), TFLOP/s.
H100_BF16_DENSE_TFLOPS = 989.0
# NVIDIA's published TF2 BERT-Large figures on one A100-80GB with AMP.
NVIDIA_A100_SEQUENCES_PER_S = {128: 485.6, 512: 96.5}
# Google's max_predictions_per_seq for its two pretraining phases.
GOOGLE_PREDICTIONS = {128: 20, 512: 80}
BERT_VOCAB_SIZE = 30522
STEP_IN_WORDS = ("run_pretraining.py's JAX step (JaxEngine.train_steps: "
                 "PretrainingTask masked LM + next sentence, "
                 "AdamWeightDecay)")

BERT_BASE = dict(num_hidden_layers=12, hidden_size=768,
                 num_attention_heads=12, intermediate_size=3072,
                 vocab_size=BERT_VOCAB_SIZE)
BERT_LARGE = dict(num_hidden_layers=24, hidden_size=1024,
                  num_attention_heads=16, intermediate_size=4096,
                  vocab_size=BERT_VOCAB_SIZE)
TINY = dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=2,
            intermediate_size=64, vocab_size=2000)

FLAGS = flags.FLAGS
flags.DEFINE_float("peak_tflops", H100_BF16_DENSE_TFLOPS,
                   "The device's peak, TFLOP/s, that MFU is measured "
                   "against (default: H100/H200 SXM dense bf16).")
flags.DEFINE_float("budget_s", 330.0,
                   "No row starts after this many seconds (later rows show "
                   "as skipped).")
flags.DEFINE_integer("steps", 10, "Timed steps per row (after the compile).")
flags.DEFINE_bool("smoke", False,
                  "Tiny shapes, 2 steps: every code path in seconds, on "
                  "any machine.")
flags.DEFINE_list("dtypes", ["mixed_bfloat16", "float32"],
                  "Keras dtype policies to run.")
flags.DEFINE_list("attention", ["fused", "google"],
                  "fused: keras.ops.dot_product_attention (no attention "
                  "dropout); google: einsum, float32 softmax, dropout.")
flags.DEFINE_integer("batch_multiplier", 1,
                     "Multiplies every row's batch (64 at sequence 128, 16 "
                     "at 512): a large GPU reaches its utilization only "
                     "with larger batches.")
flags.DEFINE_string("record_file", "gpu_suite_jax.json",
                    "Where the JSON record goes (written under a temporary "
                    "name and renamed).")


def forward_flops(config, batch_size, seq_length, num_predictions):
    """Multiply-add FLOPs (x2) of one forward pass: matmuls only (the
    count of benchmarks/pretraining.py's `forward_flops`)."""
    tokens = batch_size * seq_length
    hidden, inner = config.hidden_size, config.intermediate_size
    per_layer = (2 * tokens * hidden * hidden * 4        # Q, K, V, output
                 + 2 * tokens * hidden * inner * 2       # feed-forward
                 + 2 * 2 * batch_size * seq_length
                 * seq_length * hidden)                  # scores, context
    predictions = batch_size * num_predictions
    heads = (2 * predictions * hidden * hidden           # MLM transform
             + 2 * predictions * hidden * config.vocab_size  # MLM output
             + 2 * batch_size * hidden * hidden)         # pooler
    return config.num_hidden_layers * per_layer + heads


def suite_plan(smoke, dtypes=("mixed_bfloat16", "float32"),
               attention=("fused", "google"), batch_multiplier=1):
    """The rows, most important first.

    Returns:
      A list of dicts: name, shape (BertConfig fields), seq_length, batch,
      dtype, attention.
    """
    if smoke:
        shapes = [("tiny-16", TINY, 16, 2)]
    else:
        shapes = [("base-128", BERT_BASE, 128, 64),
                  ("large-128", BERT_LARGE, 128, 64),
                  ("base-512", BERT_BASE, 512, 16)]
    order = [(dtype, kind) for dtype in dtypes for kind in attention
             # Fused attention is a 16-bit kernel; float32 runs Google's.
             if not (dtype == "float32" and kind == "fused")]
    return [dict(name=name, shape=shape, seq_length=seq_length,
                 batch=batch * batch_multiplier, dtype=dtype, attention=kind)
            for dtype, kind in order
            for name, shape, seq_length, batch in shapes]


def synthetic_batch(config, batch_size, seq_length, num_predictions, seed):
    """Random pretraining features with the records' names, dtypes and
    shapes (ids, full masks, masked positions), as numpy arrays."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, config.vocab_size, [batch_size, seq_length])
    return {
        "input_ids": ids.astype(np.int32),
        "input_mask": np.ones([batch_size, seq_length], np.int32),
        "segment_ids": (np.arange(seq_length)[None] >= seq_length // 2
                        ).astype(np.int32).repeat(batch_size, 0),
        "masked_lm_positions": np.sort(rng.choice(
            np.arange(1, seq_length), [batch_size, num_predictions]),
            axis=1).astype(np.int32),
        "masked_lm_ids": rng.integers(
            0, config.vocab_size,
            [batch_size, num_predictions]).astype(np.int32),
        "masked_lm_weights": np.ones([batch_size, num_predictions],
                                     np.float32),
        "next_sentence_labels": rng.integers(0, 2, [batch_size]).astype(
            np.int32),
    }


class _NeverStop:
    """The trainer's stop request (SIGTERM), never made here."""
    requested = False


def build_engine(config, row, predictions):
    """The JAX engine of a run_pretraining.py run of this row: the
    pretraining task (masked LM + next sentence) and Google's optimizer.

    Returns:
      A built `jax_engine.JaxEngine` (one device, no TensorFlow).
    """
    task = pretraining.PretrainingTask(
        config, pretraining.PretrainingDataConfig(
            # The engine is fed arrays; the task reads no file here.
            input_patterns=("(synthetic batches)",),
            max_seq_length=row["seq_length"],
            max_predictions_per_seq=predictions))
    trainer_config = TrainerConfig(
        output_dir="(nothing is written)", train_batch_size=row["batch"],
        dtype=row["dtype"], seed=0, attention=row["attention"])
    trainer_config.validate()
    engine = jax_engine.JaxEngine(task, trainer_config)
    # Google's run_pretraining.py optimizer: AdamWeightDecay (rate 0.01),
    # clipping by global norm 1.0, warmup then linear decay.
    engine.build(lambda: optimization.create_optimizer(
        "adamw", 1e-4, num_train_steps=1000000, num_warmup_steps=10000))
    return engine


def run_row(row, steps, peak_flops):
    """Compiles and times one row; returns its record (a dict)."""
    seq_length = row["seq_length"]
    smoke = row["shape"] is TINY
    predictions = 4 if smoke else GOOGLE_PREDICTIONS[seq_length]
    fused = row["attention"] == "fused"
    config = BertConfig(**row["shape"],
                        max_position_embeddings=max(512, seq_length),
                        # The fused op has no attention dropout.
                        attention_probs_dropout_prob=0.0 if fused else 0.1)
    engine = build_engine(config, row, predictions)
    batches = itertools.repeat(synthetic_batch(
        config, row["batch"], seq_length, predictions, seed=0))
    started = time.perf_counter()
    # The first call traces and compiles the step.
    engine.train_steps(batches, 1, _NeverStop())
    compile_s = time.perf_counter() - started
    started = time.perf_counter()
    _, steps_run, loss = engine.train_steps(batches, steps, _NeverStop())
    per_step = (time.perf_counter() - started) / steps_run
    flops = 3 * forward_flops(config, row["batch"], seq_length, predictions)
    record = {key: row[key] for key in ("name", "seq_length", "batch",
                                        "dtype", "attention")}
    record.update(
        compile_s=round(compile_s, 2), step_ms=round(per_step * 1e3, 3),
        sequences_per_s=round(row["batch"] / per_step, 1),
        mfu=round(flops / per_step / peak_flops, 4),
        final_loss=round(float(loss), 4),
        nvidia_a100_tf2_sequences_per_s=(
            NVIDIA_A100_SEQUENCES_PER_S.get(seq_length)
            if row["shape"] is BERT_LARGE or seq_length == 512 else None))
    return record


COLUMNS = ("name", "dtype", "attention", "batch", "step_ms",
           "sequences_per_s", "mfu", "nvidia_a100_tf2_sequences_per_s")


def format_row(record):
    if "skipped" in record:
        return f"{record['name']:<10} {record['dtype']:<15} " \
               f"{record['attention']:<7} skipped ({record['skipped']})"
    nvidia = record["nvidia_a100_tf2_sequences_per_s"]
    return (f"{record['name']:<10} {record['dtype']:<15} "
            f"{record['attention']:<7} {record['batch']:>5} "
            f"{record['step_ms']:>9.1f} {record['sequences_per_s']:>9.1f} "
            f"{record['mfu']:>6.1%} "
            f"{'' if nvidia is None else nvidia:>8}")


def write_record(path, record):
    """JSON, under a temporary name renamed into place."""
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as writer:
        json.dump(record, writer, indent=2)
        writer.write("\n")
    os.replace(temporary, path)


def run_suite(smoke, dtypes, attention, steps, budget_s, peak_tflops,
              record_file, batch_multiplier=1):
    """Runs the plan, printing each row when done; returns the record."""
    plan = suite_plan(smoke, dtypes, attention, batch_multiplier)
    device = jax.devices()[0]
    record = {"backend": keras.backend.backend(),
              "device": f"{device.platform}: {device.device_kind}",
              "jax": jax.__version__, "keras": keras.__version__,
              "peak_tflops": peak_tflops, "steps": steps,
              # What is timed: the trainer's own step.
              "step": STEP_IN_WORDS, "rows": []}
    print(f"{STEP_IN_WORDS} on {record['device']}, "
          f"Keras {keras.__version__} / JAX {jax.__version__}; MFU against "
          f"{peak_tflops:g} TFLOP/s; NVIDIA's TF2 BERT-Large on one "
          "A100-80GB (AMP): 485.6 seq/s at 128, 96.5 at 512")
    print(f"{'row':<10} {'dtype':<15} {'attn':<7} {'batch':>5} "
          f"{'step ms':>9} {'seq/s':>9} {'MFU':>6} {'A100 TF2':>8}")
    started = time.perf_counter()
    for row in plan:
        if time.perf_counter() - started > budget_s:
            result = {key: row[key] for key in ("name", "dtype",
                                                "attention")}
            result["skipped"] = f"--budget_s={budget_s:g} spent"
        else:
            try:
                result = run_row(row, steps, peak_tflops * 1e12)
            except Exception as error:  # pylint: disable=broad-except
                # One row's failure (out of memory, no kernel) is reported
                # and the next row runs.
                result = {key: row[key] for key in ("name", "dtype",
                                                    "attention")}
                result["skipped"] = (f"{type(error).__name__}: "
                                     f"{str(error).splitlines()[0][:200]}")
            keras.backend.clear_session()
        record["rows"].append(result)
        # The point of this suite: it runs where TensorFlow is not.
        record["tensorflow_imported"] = "tensorflow" in sys.modules
        print(format_row(result), flush=True)
        write_record(record_file, record)
    return record


def main(argv):
    del argv
    if keras.backend.backend() != "jax":
        raise app.UsageError(
            f"gpu_suite_jax.py runs on Keras' JAX backend; KERAS_BACKEND is "
            f"{keras.backend.backend()}")
    run_suite(FLAGS.smoke, FLAGS.dtypes, FLAGS.attention,
              2 if FLAGS.smoke else FLAGS.steps, FLAGS.budget_s,
              FLAGS.peak_tflops, FLAGS.record_file, FLAGS.batch_multiplier)
    print(f"record: {FLAGS.record_file}")


if __name__ == "__main__":
    app.run(main)
