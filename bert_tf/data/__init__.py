"""What every task's data shares: the encoder's input names and pair framing
(`encoded_input`), TFRecord files (`tfrecord_files`), batches of in-memory
feature arrays (`in_memory`) and Google's sliding windows over long inputs
(`windows`). A task's own readers and features live in its folder
(`bert_tf/tasks/<task>/`, `bert_tf/pretraining/`)."""
