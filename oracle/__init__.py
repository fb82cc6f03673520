"""ccgym.oracle"""
