"""Present so that the harness takes this fake for Google's layout (torch_tpu._internal)."""
