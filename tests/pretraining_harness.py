"""Small pretraining data and references the pretraining tests share.

`make_pretraining_arrays` (random records shaped as
create_pretraining_data's), `write_pretraining_records`,
`ArrayPretrainingTask` (the pretraining task on in-memory arrays, in a fixed
order) and numpy references of Google's losses.
"""

import numpy as np
import tensorflow as tf

from bert_tf.pretraining import records
from bert_tf.pretraining import task as pretraining
from bert_tf.tasks import base


def make_pretraining_arrays(num_examples, max_seq_length=16,
                            max_predictions_per_seq=4, vocab_size=100, seed=0):
    """Random pretraining examples shaped as create_pretraining_data's.

    Sequences have random lengths with padding; each example has a random
    number of real predictions (weight 1) followed by padding (weight 0), as
    Google's records do.
    """
    rng = np.random.RandomState(seed)
    n, s, p = num_examples, max_seq_length, max_predictions_per_seq
    lengths = rng.randint(s // 2, s + 1, size=n)
    input_mask = (np.arange(s)[None, :] < lengths[:, None]).astype(np.int64)
    input_ids = rng.randint(5, vocab_size, size=(n, s)) * input_mask
    segment_ids = ((np.arange(s)[None, :] >= (lengths // 2)[:, None])
                   * input_mask).astype(np.int64)
    num_predictions = rng.randint(1, p + 1, size=n)
    weights = (np.arange(p)[None, :] < num_predictions[:, None]).astype(
        np.float32)
    positions = np.stack([np.sort(rng.choice(np.arange(1, length), p,
                                             replace=False))
                          for length in lengths]) * weights.astype(np.int64)
    ids = rng.randint(5, vocab_size, size=(n, p)) * weights.astype(np.int64)
    return {
        records.INPUT_IDS: input_ids.astype(np.int64),
        records.INPUT_MASK: input_mask,
        records.SEGMENT_IDS: segment_ids,
        records.MASKED_LM_POSITIONS: positions.astype(np.int64),
        records.MASKED_LM_IDS: ids.astype(np.int64),
        records.MASKED_LM_WEIGHTS: weights,
        records.NEXT_SENTENCE_LABELS: rng.randint(0, 2, size=(n, 1)).astype(
            np.int64),
    }


def write_pretraining_records(path, arrays):
    """Writes `arrays` as tf.train.Examples with Google's feature names."""
    num_examples = len(arrays[records.INPUT_IDS])
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(num_examples):
            feature = {}
            for name, values in arrays.items():
                row = np.asarray(values[i]).reshape(-1)
                if row.dtype.kind == "f":
                    feature[name] = tf.train.Feature(
                        float_list=tf.train.FloatList(value=row.tolist()))
                else:
                    feature[name] = tf.train.Feature(
                        int64_list=tf.train.Int64List(value=row.tolist()))
            example = tf.train.Example(
                features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    return str(path)


def write_tiny_pretraining_data(directory, seq_length, predictions,
                                examples_per_shard=48, **config_changes):
    """Two record shards (`records-0.tfrecord`, `records-1.tfrecord`) and
    a tiny `bert_config.json` (`config_changes` applied) in `directory`.

    Returns:
      `directory`.
    """
    from modeling_harness import tiny_bert_config
    for shard in range(2):
        write_pretraining_records(
            directory / f"records-{shard}.tfrecord",
            make_pretraining_arrays(examples_per_shard, seq_length,
                                    predictions, seed=shard))
    tiny_bert_config(**config_changes).to_json_file(
        str(directory / "bert_config.json"))
    return directory


def pretraining_command_line(data_dir, output_dir, seq_length, predictions,
                             settings, **overrides):
    """run_pretraining.py's `--name=value` flags on the data of
    `write_tiny_pretraining_data`: its files, `seq_length`, `predictions`,
    then `settings` and `overrides` (a None value leaves the flag out)."""
    values = {
        "input_file": f"{data_dir}/records-*.tfrecord",
        "output_dir": str(output_dir),
        "bert_config_file": str(data_dir / "bert_config.json"),
        "max_seq_length": str(seq_length),
        "max_predictions_per_seq": str(predictions),
        **settings, **overrides}
    return [f"--{k}={v}" for k, v in values.items() if v is not None]


class ArrayPretrainingTask(pretraining.PretrainingTask):
    """The pretraining task on in-memory arrays, in a fixed order.

    Training repeats the arrays without shuffling, so two runs (or one device
    and N replicas of one worker) see the same global batches. With several
    input pipelines (workers), each reads every k-th example.
    """

    def __init__(self, bert_config, arrays, init_checkpoint=None,
                 **data_changes):
        data = dict(input_patterns=("<in memory>",), max_seq_length=len(
            arrays[records.INPUT_IDS][0]), max_predictions_per_seq=len(
            arrays[records.MASKED_LM_IDS][0]))
        data.update(data_changes)
        super().__init__(bert_config, pretraining.PretrainingDataConfig(**data),
                         init_checkpoint=init_checkpoint)
        self.arrays = arrays

    def build_inputs(self, mode, per_replica_batch_size, input_context=None):
        arrays = {k: (v.astype(np.int32) if v.dtype.kind == "i" else v)
                  for k, v in self.arrays.items()}
        dataset = tf.data.Dataset.from_tensor_slices(arrays)
        if input_context is not None and input_context.num_input_pipelines > 1:
            dataset = dataset.shard(input_context.num_input_pipelines,
                                    input_context.input_pipeline_id)
        if mode == base.TRAIN:
            dataset = dataset.repeat()
        return dataset.batch(per_replica_batch_size,
                             drop_remainder=mode == base.TRAIN)


# -- numpy references (Google's formulas, written out) -----------------------

def numpy_log_softmax(logits):
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def numpy_pretraining_losses(mlm_logits, mlm_ids, mlm_weights, nsp_logits,
                             nsp_labels):
    """Google's run_pretraining.py losses, in float64 numpy."""
    log_probs = numpy_log_softmax(mlm_logits)
    per_prediction = -np.take_along_axis(
        log_probs, np.asarray(mlm_ids)[..., None], axis=-1)[..., 0]
    weights = np.asarray(mlm_weights, np.float64)
    mlm = (weights * per_prediction).sum() / (weights.sum() + 1e-5)
    nsp_log_probs = numpy_log_softmax(nsp_logits)
    labels = np.asarray(nsp_labels).reshape(-1)
    nsp = -nsp_log_probs[np.arange(len(labels)), labels].mean()
    return mlm, nsp
