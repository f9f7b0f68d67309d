"""TF1 name-based checkpoints and conversion to and from other formats.

`load_checkpoint(model, path)` assigns each variable the tensor named by its
`.path` (Google's names); `save_checkpoint(tensors, prefix)` writes a TF1
checkpoint Google's code reads; `huggingface` converts Hugging Face BERT
safetensors to and from Google's format, `keras_hub_preset` keras-hub
presets.
"""

from bert_tf.checkpoints.huggingface import ConversionError
from bert_tf.checkpoints.huggingface import convert_google_to_hf
from bert_tf.checkpoints.huggingface import convert_hf_to_google
from bert_tf.checkpoints.huggingface import google_config_to_hf
from bert_tf.checkpoints.huggingface import google_to_hf_name
from bert_tf.checkpoints.huggingface import google_to_hf_tensors
from bert_tf.checkpoints.huggingface import hf_config_to_google
from bert_tf.checkpoints.huggingface import hf_to_google_name
from bert_tf.checkpoints.huggingface import hf_to_google_tensors
from bert_tf.checkpoints.huggingface import read_hf_safetensors
from bert_tf.checkpoints.keras_hub_preset import convert_google_to_keras_hub
from bert_tf.checkpoints.keras_hub_preset import convert_keras_hub_to_google
from bert_tf.checkpoints.tf1_checkpoint import CheckpointError
from bert_tf.checkpoints.tf1_checkpoint import CheckpointNotFoundError
from bert_tf.checkpoints.tf1_checkpoint import CheckpointTensors
from bert_tf.checkpoints.tf1_checkpoint import DamagedCheckpointError
from bert_tf.checkpoints.tf1_checkpoint import LoadReport
from bert_tf.checkpoints.tf1_checkpoint import checkpoint_shapes
from bert_tf.checkpoints.tf1_checkpoint import load_checkpoint
from bert_tf.checkpoints.tf1_checkpoint import load_summary
from bert_tf.checkpoints.tf1_checkpoint import open_checkpoint
from bert_tf.checkpoints.tf1_checkpoint import read_checkpoint
from bert_tf.checkpoints.tf1_checkpoint import resolve_checkpoint
from bert_tf.checkpoints.tf1_checkpoint import save_checkpoint
from bert_tf.checkpoints.tf1_checkpoint import variable_name
from bert_tf.checkpoints.tf1_checkpoint import write_checkpoint_state
