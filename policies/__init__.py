"""ccgym.policies"""
