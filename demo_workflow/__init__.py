"""The main job of `demo.py` and the experiments: steps run as subprocesses
(`workflow`) and the HTML report of their results (`report`). Not part of
the installed library (setup.py installs `bert_tf` only)."""
