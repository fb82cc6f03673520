"""ccgym.envs"""
