"""hebictl: controller for robot arms built from HEBI Robotics modules."""
