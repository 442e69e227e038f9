"""The suite sweep: repeat every test, screen it cheaply, and judge the flagged ones with the
same loop and verdict as a marked test. The driver, the screen and the outcome are plain code;
the hooks and the housekeeping between repeats are the sweep's pytest edge."""
