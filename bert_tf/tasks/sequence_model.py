"""The encoder part of the models whose head reads every position.

SQuAD's span head and the tagger's token classifier both read the encoder's
state of each position, optionally through a randomly initialized `BiLSTM`
(`run_squad.py --span_bilstm`, `run_tagging.py --bilstm_units`: right
context for a left-to-right encoder). `SequenceOutputModel` holds that
shared part once: the `BertModel`, the optional BiLSTM, and the states the
head reads.
"""

from bert_tf.data.encoded_input import INPUT_IDS, INPUT_MASK, SEGMENT_IDS
from bert_tf.modeling import BertModel, BiLSTM
from bert_tf.modeling import save_signature

# A variable of the BiLSTM (run_squad.py --span_bilstm, run_tagging.py
# --tagging_bilstm), [units, 4 * units].
BILSTM_RECURRENT_KERNEL = "bilstm/fw/lstm_cell/recurrent_kernel"


def bilstm_units_of(checkpoint_shapes):
    """The BiLSTM of a fine-tuned checkpoint: its units per direction, or
    None when it has none (its variables say so; its run's flags are not
    needed).

    Args:
      checkpoint_shapes: {variable name: shape} of the checkpoint
        (`bert_tf.checkpoints.checkpoint_shapes`).
    """
    recurrent_kernel = checkpoint_shapes.get(BILSTM_RECURRENT_KERNEL)
    return None if recurrent_kernel is None else recurrent_kernel[0]


class SequenceOutputModel(save_signature.TaskModel):
    """`BertModel` (+ `BiLSTM`), for a head over every position.

    Variables: `bert/...`; with a BiLSTM also `bilstm/fw/...` and
    `bilstm/bw/...` (see `bert_tf.modeling.bilstm`). A subclass makes its
    head for inputs `head_input_size` wide and calls `sequence_output` in
    its `call`.
    """

    def __init__(self, bert_config, causal_attention=False,
                 bilstm_units=None, **kwargs):
        """Args:
          bert_config: a `BertConfig`.
          causal_attention: the encoder attends left to right only (see
            `BertModel`).
          bilstm_units: None, or the state size of each direction of a
            randomly initialized `BiLSTM` between the encoder and the head.
          **kwargs: Keras model arguments (`name`, ...).
        """
        super().__init__(**kwargs)
        self.bert_config = bert_config
        self.causal_attention = bool(causal_attention)
        self.bilstm_units = (None if bilstm_units is None
                             else int(bilstm_units))
        self.bert = BertModel(bert_config,
                              causal_attention=self.causal_attention)
        self.bilstm = (None if self.bilstm_units is None
                       else BiLSTM(self.bilstm_units))

    def task_config(self):
        return {"causal_attention": self.causal_attention,
                "bilstm_units": self.bilstm_units}

    @property
    def head_input_size(self):
        """The width of what the head reads: None (the encoder's hidden
        size) or the BiLSTM's 2 * units."""
        return None if self.bilstm is None else 2 * self.bilstm_units

    def sequence_output(self, features, training=False):
        """float [batch, seq, width]: each position's encoder state, or the
        BiLSTM's over them, for a feature dict with the encoder's inputs."""
        input_mask = features[INPUT_MASK]
        sequence_output = self.bert(
            features[INPUT_IDS], input_mask=input_mask,
            segment_ids=features[SEGMENT_IDS],
            training=training)["sequence_output"]
        if self.bilstm is not None:
            sequence_output = self.bilstm(sequence_output,
                                          input_mask=input_mask,
                                          training=training)
        return sequence_output
