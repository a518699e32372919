"""What every stage shares: the catalogue, the causes, the tables C++ also reads, the run model,
metrics, machine facts and words."""
