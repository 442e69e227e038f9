"""Pure rules: quantities and budget specs, the fit, the verdict, when a run stops, and the
regression rule against a baseline. Nothing here imports pytest, psutil or torch, or measures
anything: each rule is a function of numbers and is tested on synthetic series."""
