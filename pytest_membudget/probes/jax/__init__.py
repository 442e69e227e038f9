"""JAX: the arrays alive in the process and where they were made, the compilations and what
made a jitted function compile again, and JAX's device allocator on a GPU or TPU. JAX is
imported only when one of these probes is built."""
