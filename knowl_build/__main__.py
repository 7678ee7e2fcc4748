from __future__ import annotations

from knowl_build.cli import main

if __name__ == "__main__":
    main()
