"""ccgym.deploy"""
