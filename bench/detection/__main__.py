import sys

from bench.detection.run import main

sys.exit(main())
