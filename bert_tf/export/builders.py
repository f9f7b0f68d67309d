"""What every task's export builder shares, and the embeddings export.

A task's builder (`bert_tf/tasks/<task>/export.py`) creates the task model,
loads every one of its variables from the checkpoint (strictly, here: a
fine-tuned checkpoint must hold the task's head under Google's names, e.g.
`output_weights`/`output_bias` or `cls/squad/...`), and wraps it with the
in-graph tokenizer.

`serving_dtype` (`export_saved_model.py --serving_dtype`): `float32`, or
`bfloat16`: the model is built under Keras' bfloat16 policy, so its
variables are stored in bfloat16 (converted from the float32 checkpoint as
it loads) and its matmuls compute in bfloat16; LayerNorm, softmax, the
logits and every output stay float32.
"""

from bert_tf import checkpoints
from bert_tf.data import sequence_lengths
from bert_tf.export import serving
from bert_tf.text.graph_tokenizer import GraphFullTokenizer
from bert_tf.training import precision


def check_length(max_seq_length, bert_config, pad_to_multiple_of=None,
                 serving_dtype="float32"):
    """Refuses lengths and a serving dtype an export cannot serve.

    Raises:
      ValueError: naming the flag.
    """
    precision.validate_serving_dtype(serving_dtype)
    bert_config.check_max_seq_length(max_seq_length)
    if max_seq_length < 3:
        raise ValueError(
            f"--max_seq_length={max_seq_length} cannot hold [CLS] and two "
            "[SEP]")
    if pad_to_multiple_of is not None:
        sequence_lengths.LengthPolicy(
            pad_to_multiple_of=pad_to_multiple_of).validate()


def lengths(pad_to_multiple_of):
    """The export's `pad_to_multiple_of` keyword: none when None (the
    export's own default)."""
    return {} if pad_to_multiple_of is None else {
        "pad_to_multiple_of": pad_to_multiple_of}


def load_strictly(model, init_checkpoint):
    """`model` with every variable from `init_checkpoint` (a missing or
    mis-shaped one is a `CheckpointError` naming it)."""
    checkpoints.load_checkpoint(model, init_checkpoint, strict=True)
    return model


def embedding_export(bert_config, vocab_file, do_lower_case, init_checkpoint,
                     max_seq_length, causal_attention=False,
                     pad_to_multiple_of=None, enable_xla=False,
                     serving_dtype="float32"):
    """An `EmbeddingExport` of any checkpoint's encoder (`bert/...`).

    Args: as `bert_tf.tasks.classification.export.classifier_export`'s.
    """
    from bert_tf.modeling import BertModel
    check_length(max_seq_length, bert_config, pad_to_multiple_of,
                  serving_dtype)
    with precision.serving_dtype_scope(serving_dtype):
        model = BertModel(bert_config, causal_attention=causal_attention)
    model.build()
    load_strictly(model, init_checkpoint)
    tokenizer = GraphFullTokenizer(vocab_file, do_lower_case)
    return serving.EmbeddingExport(model, tokenizer, max_seq_length,
                                   enable_xla=enable_xla,
                                   **lengths(pad_to_multiple_of))
