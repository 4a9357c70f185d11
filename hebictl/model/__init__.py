"""Robot model: data types (tree), builder, RobotModel (robot), fused kernel tables, kernels, IK."""
