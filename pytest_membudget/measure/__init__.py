"""The measuring loop: warm-up, the window, the samples it stores, the probe set it reads, the
stride between samples, the gc policy around them, and the result built from them. Every
driver (the fixture's run and iterate, their async forms, the marker-only mode, the sweep)
runs this one loop."""
