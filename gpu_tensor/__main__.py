"""`python -m gpu_tensor`: the `gpu-tensor` command line."""

import sys

from gpu_tensor.cli.main import main

sys.exit(main())
