"""A fake torch_tpu for the scanner's tests (see ../../README.md); not Google's TorchTPU."""
