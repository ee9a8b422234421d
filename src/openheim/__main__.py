import sys

from openheim.cli.main import main

sys.exit(main())
