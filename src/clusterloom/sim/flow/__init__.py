"""Flow-level (fluid, max-min fair) simulation of transports on a generated fabric."""
