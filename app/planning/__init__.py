"""Study plans and prior orders."""
