r"""The cost of an exact resume: skipping the input a resumed run consumed.

With `--seed`, a resumed run rebuilds its seeded input pipeline and skips
the batches the steps before its checkpoint took (`Trainer
.make_train_iterator`). That skip reads, shuffles and batches those records
again, so its cost grows with the step a run resumes from. This script
writes pretraining records (Google's features, `--max_seq_length`), then, in
one process, times on the same pipeline:

* skip: building the iterator with `.skip(n)` and taking one batch (what a
  resume does), and
* read: iterating the first n + 1 batches, as the uninterrupted run's
  input did (the peer);

best of `--rounds` each, interleaved (`harness.best_seconds_interleaved`),
and prints records/s of each and their ratio. Usage:

    python benchmarks/resume_skip.py --records=200000 --batch_size=32
"""

import argparse
import os
import tempfile
import time

import harness  # noqa: F401  (repository on sys.path, quiet TensorFlow)
import numpy as np
import tensorflow as tf

from bert_tf.data import tfrecord_files
from bert_tf.pretraining import dataset as pretraining_dataset
from bert_tf.pretraining import records


def write_records(path, count, max_seq_length, max_predictions, seed=0):
    """`count` random records with Google's pretraining features."""
    rng = np.random.RandomState(seed)

    def int_feature(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    def float_feature(values):
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))

    with tfrecord_files.TFRecordFileWriter(path) as writer:
        for _ in range(count):
            example = tf.train.Example(features=tf.train.Features(feature={
                records.INPUT_IDS: int_feature(
                    rng.randint(1, 30000, max_seq_length)),
                records.INPUT_MASK: int_feature([1] * max_seq_length),
                records.SEGMENT_IDS: int_feature([0] * max_seq_length),
                records.MASKED_LM_POSITIONS: int_feature(
                    rng.randint(1, max_seq_length, max_predictions)),
                records.MASKED_LM_IDS: int_feature(
                    rng.randint(1, 30000, max_predictions)),
                records.MASKED_LM_WEIGHTS: float_feature(
                    [1.0] * max_predictions),
                records.NEXT_SENTENCE_LABELS: int_feature([0]),
            }))
            writer.write(example.SerializeToString())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=200000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as directory:
        started = time.perf_counter()
        for index in range(args.files):
            write_records(os.path.join(directory, f"r-{index}.tfrecord"),
                          args.records // args.files, args.max_seq_length,
                          args.max_predictions_per_seq, seed=index)
        size = sum(os.path.getsize(os.path.join(directory, name))
                   for name in os.listdir(directory))
        print(f"wrote {args.records} records ({size / 1e6:.0f} MB) in "
              f"{time.perf_counter() - started:.0f} s")

        def dataset():
            return pretraining_dataset.pretraining_dataset(
                os.path.join(directory, "*.tfrecord"), args.batch_size,
                args.max_seq_length, args.max_predictions_per_seq,
                is_training=True, seed=1)

        batches = args.records // args.batch_size  # one pass over the data

        def skip():
            next(iter(dataset().skip(batches)))

        def read():
            iterator = iter(dataset())
            for _ in range(batches + 1):
                next(iterator)

        skip_seconds, read_seconds = harness.best_seconds_interleaved(
            [skip, read], rounds=args.rounds)
    skipped = batches * args.batch_size
    print(f"skip {batches} batches ({skipped} records): {skip_seconds:.1f} s "
          f"({skipped / skip_seconds:,.0f} records/s)")
    print(f"read the same batches: {read_seconds:.1f} s "
          f"({skipped / read_seconds:,.0f} records/s)")
    print(f"skip / read: {skip_seconds / read_seconds:.2f}")


if __name__ == "__main__":
    main()
