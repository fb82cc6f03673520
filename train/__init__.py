"""ccgym.train"""
