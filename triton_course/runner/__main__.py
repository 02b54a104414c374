import sys

from triton_course.runner.cli import main

sys.exit(main())
