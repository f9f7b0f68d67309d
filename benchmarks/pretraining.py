"""Pretraining speed: bert_tf's trainer against Model Garden's BERT pretrainer.

Both build the same network (BERT-Base by default: 12 layers, hidden 768,
12 heads, intermediate 3072, vocab 30522) with the masked-LM and
next-sentence heads, on the same synthetic batch (sequence 128, batch 8,
20 masked positions, `--dtype`, default float32), in this one process:

- bert_tf: `PretrainingTask` + `Trainer` (Google's AdamWeightDecay, clipping
  by global norm 1.0), timing `Trainer.train_steps`, which runs
  `--steps_per_call` steps per `tf.function` call over a `tf.data` iterator.
- Model Garden: `official.nlp.modeling.networks.BertEncoderV2` inside
  `models.BertPretrainerV2` with a 2-class `ClassificationHead`, trained with
  Model Garden's `legacy_adamw.AdamWeightDecay` (Google's optimizer for
  tf_keras: the same moments, decay and global-norm clipping), the same loss
  formulas, and the same loop shape (a `tf.function` over a `tf.data`
  iterator running `--steps_per_call` steps).

Inference is the forward pass of each pretraining model (encoder, pooler,
both heads; no dropout) in a `tf.function`. A large float32 matmul measured
in the same run gives the machine's practical FLOP/s; bert_tf's training and
inference FLOP/s (counted analytically: matmuls only) are reported as a
fraction of it. Nothing is asserted about time.

    python benchmarks/pretraining.py                      # BERT-Base
    python benchmarks/pretraining.py --num_layers 2 --steps 3   # quick

Each function runs one untimed call first (tracing, warm-up); then the two
implementations' timed calls (and the matmul's) alternate for `--rounds`
(training) or `--inference_rounds` rounds and the best of each is kept, so a
change in the machine's load favours neither.
"""

import argparse
import os
import shutil
import tempfile

import harness  # first: puts the repository on the path, quiets TF logging

import numpy as np
import tensorflow as tf


def synthetic_batch(batch_size, seq_length, num_predictions, vocab_size,
                    seed=0):
    """One pretraining batch (Google's feature names), full sequences."""
    rng = np.random.RandomState(seed)
    positions = np.stack([np.sort(rng.choice(np.arange(1, seq_length),
                                             num_predictions, replace=False))
                          for _ in range(batch_size)])
    return {
        "input_ids": rng.randint(1000, vocab_size,
                                 (batch_size, seq_length)).astype(np.int32),
        "input_mask": np.ones((batch_size, seq_length), np.int32),
        "segment_ids": np.concatenate(
            [np.zeros((batch_size, seq_length // 2), np.int32),
             np.ones((batch_size, seq_length - seq_length // 2), np.int32)],
            axis=1),
        "masked_lm_positions": positions.astype(np.int32),
        "masked_lm_ids": rng.randint(1000, vocab_size, (batch_size,
                                                        num_predictions)
                                     ).astype(np.int32),
        "masked_lm_weights": np.ones((batch_size, num_predictions),
                                     np.float32),
        "next_sentence_labels": rng.randint(0, 2, (batch_size,)).astype(
            np.int32),
    }


def forward_flops(args):
    """Multiply-add FLOPs (x2) of one forward pass: matmuls only."""
    tokens = args.batch_size * args.seq_length
    hidden, inner = args.hidden_size, args.intermediate_size
    per_layer = (2 * tokens * hidden * hidden * 4        # Q, K, V, output
                 + 2 * tokens * hidden * inner * 2       # feed-forward
                 + 2 * 2 * args.batch_size * args.seq_length
                 * args.seq_length * hidden)             # scores, context
    predictions = args.batch_size * args.num_predictions
    heads = (2 * predictions * hidden * hidden           # MLM transform
             + 2 * predictions * hidden * args.vocab_size  # MLM output
             + 2 * args.batch_size * hidden * hidden)    # pooler
    return args.num_layers * per_layer + heads


def bert_tf_pretraining(args, batch):
    from bert_tf.pretraining.task import PretrainingDataConfig
    from bert_tf.pretraining.task import PretrainingTask
    from bert_tf.tasks import base
    from bert_tf.training import optimization
    from bert_tf.training.trainer import Trainer, TrainerConfig

    config = harness.bert_config(args)

    class SyntheticPretrainingTask(PretrainingTask):
        def build_inputs(self, mode, per_replica_batch_size,
                         input_context=None):
            dataset = tf.data.Dataset.from_tensors(batch)
            return dataset.repeat() if mode == base.TRAIN else dataset

    task = SyntheticPretrainingTask(config, PretrainingDataConfig(
        input_patterns=("<synthetic>",), max_seq_length=args.seq_length,
        max_predictions_per_seq=args.num_predictions))
    output_dir = tempfile.mkdtemp(prefix="bert_tf_benchmark_")
    trainer = Trainer(
        task,
        TrainerConfig(output_dir=output_dir,
                      train_batch_size=args.batch_size,
                      num_train_steps=10 ** 9,
                      dtype=getattr(args, "dtype", "float32"),
                      enable_xla=args.enable_xla),
        optimizer_factory=lambda: optimization.create_optimizer(
            "adamw", 1e-4, 10 ** 6, 0))
    iterator = trainer.make_train_iterator()

    def train():
        _, steps_run, loss = trainer.train_steps(iterator, args.steps_per_call)
        assert steps_run == args.steps_per_call and np.isfinite(loss), loss

    features = {k: tf.constant(v) for k, v in batch.items()}
    infer = tf.function(lambda: trainer.model(features, training=False),
                        jit_compile=args.enable_xla or None)

    def inference():
        outputs = infer()
        outputs["masked_lm_logits"].numpy()

    shutil.rmtree(output_dir)  # ours, and empty: nothing is saved
    return train, inference


def _model_garden_inputs(features):
    """BertPretrainerV2's inputs from a batch of Google's features."""
    return {"input_word_ids": features["input_ids"],
            "input_mask": features["input_mask"],
            "input_type_ids": features["segment_ids"],
            "masked_lm_positions": features["masked_lm_positions"]}


def model_garden_pretraining(args, batch):
    """Model Garden's BertPretrainerV2: (train, inference) functions.

    Built under `args.dtype` (default float32), its training step compiled
    with XLA when `args.enable_xla`, in `harness.model_garden_train_steps`'
    loop, as the fine-tuning benchmarks train Model Garden's models.
    """
    from official.nlp.modeling import layers, models

    dtype = getattr(args, "dtype", "float32")
    with harness.model_garden_precision(dtype):
        # The layers take the policy when they are made.
        pretrainer = models.BertPretrainerV2(
            encoder_network=harness.model_garden_bert_encoder_v2(
                harness.bert_config(args)),
            classification_heads=[layers.ClassificationHead(
                inner_dim=args.hidden_size, num_classes=2,
                name="next_sentence")])
        # Layers made at the first call (the masked-LM head's) take the
        # policy too.
        pretrainer(_model_garden_inputs(batch))

    def loss_fn(outputs, features):
        # Google's formulas (as bert_tf's task computes them), in float32.
        log_probs = tf.nn.log_softmax(
            tf.cast(outputs["mlm_logits"], tf.float32), axis=-1)
        one_hot = tf.one_hot(features["masked_lm_ids"], args.vocab_size)
        per_prediction = -tf.reduce_sum(log_probs * one_hot, axis=-1)
        weights = features["masked_lm_weights"]
        mlm = tf.reduce_sum(weights * per_prediction) / (
            tf.reduce_sum(weights) + 1e-5)
        nsp_log_probs = tf.nn.log_softmax(
            tf.cast(outputs["next_sentence"], tf.float32), axis=-1)
        nsp = -tf.reduce_mean(tf.reduce_sum(
            tf.one_hot(features["next_sentence_labels"], 2) * nsp_log_probs,
            axis=-1))
        return mlm + nsp

    train_steps = harness.model_garden_train_steps(
        pretrainer, harness.model_garden_adam_weight_decay(1e-4),
        iter(tf.data.Dataset.from_tensors(batch).repeat()), loss_fn, dtype,
        args.enable_xla, extra_inputs=("masked_lm_positions",))

    def train():
        loss = train_steps(tf.constant(args.steps_per_call))
        assert np.isfinite(loss.numpy())

    features = {k: tf.constant(v) for k, v in batch.items()}
    infer = tf.function(
        lambda: pretrainer(_model_garden_inputs(features), training=False),
        jit_compile=args.enable_xla or None)

    def inference():
        infer()["mlm_logits"].numpy()

    return train, inference


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    harness.add_model_shape_arguments(parser, with_vocab_size=True)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--num_predictions", type=int, default=20)
    parser.add_argument("--steps", "--steps_per_call", dest="steps_per_call",
                        type=int, default=5,
                        help="training steps per timed tf.function call")
    parser.add_argument("--rounds", type=int, default=2,
                        help="timed training calls of each (best is kept)")
    parser.add_argument("--inference_rounds", type=int, default=6,
                        help="timed inference calls of each (best is kept)")
    parser.add_argument("--matmul_size", type=int, default=2048)
    harness.add_precision_arguments(parser)  # --dtype, --enable_xla
    parser.add_argument("--skip_model_garden", action="store_true")
    args = parser.parse_args()

    batch = synthetic_batch(args.batch_size, args.seq_length,
                            args.num_predictions, args.vocab_size)
    print(f"shape: {args.num_layers} layers, hidden {args.hidden_size}, "
          f"heads {args.num_attention_heads}, intermediate "
          f"{args.intermediate_size}, vocab {args.vocab_size}; sequence "
          f"{args.seq_length}, batch {args.batch_size}, "
          f"{args.num_predictions} predictions, {args.dtype}; "
          f"{os.cpu_count()} CPUs, TF {tf.__version__}", flush=True)

    matmul_fn, matmul_flops = harness.matmul_benchmark(args.matmul_size, 10)
    ours = bert_tf_pretraining(args, batch)
    theirs = None if args.skip_model_garden else model_garden_pretraining(
        args, batch)
    contenders = [ours] if theirs is None else [ours, theirs]
    # Interleaved measurements: the matmul reference with each
    # implementation's training, then with their inference (cheaper, so
    # more rounds); the matmul keeps its best time of both.
    train_times = harness.best_seconds_interleaved(
        [matmul_fn] + [c[0] for c in contenders], args.rounds)
    infer_times = harness.best_seconds_interleaved(
        [matmul_fn] + [c[1] for c in contenders], args.inference_rounds)
    matmul = matmul_flops / min(train_times[0], infer_times[0])
    train_times = [t / args.steps_per_call for t in train_times[1:]]
    infer_times = infer_times[1:]
    ours_train, ours_infer = train_times[0], infer_times[0]
    print(f"matmul {args.matmul_size}^3 float32: {matmul / 1e9:.1f} GFLOP/s")
    flops = forward_flops(args)
    train_rate = 3 * flops / ours_train  # forward + two backward matmuls
    infer_rate = flops / ours_infer
    print(f"bert_tf{' (XLA)' if args.enable_xla else ''}: "
          f"training {1 / ours_train:.3f} steps/s "
          f"({args.batch_size / ours_train:.1f} sequences/s), "
          f"inference {args.batch_size / ours_infer:.1f} sequences/s")
    print(f"bert_tf FLOP/s: training {train_rate / 1e9:.1f} GFLOP/s = "
          f"{train_rate / matmul:.0%} of matmul, inference "
          f"{infer_rate / 1e9:.1f} GFLOP/s = {infer_rate / matmul:.0%} of "
          f"matmul")
    if theirs is None:
        return
    theirs_train, theirs_infer = train_times[1], infer_times[1]
    print(f"Model Garden BertPretrainerV2: training "
          f"{1 / theirs_train:.3f} steps/s, inference "
          f"{args.batch_size / theirs_infer:.1f} sequences/s")
    print(f"ratio bert_tf / Model Garden: training "
          f"{harness.ratio(theirs_train, ours_train)}, inference "
          f"{harness.ratio(theirs_infer, ours_infer)}")


if __name__ == "__main__":
    main()
