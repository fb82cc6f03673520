"""ccgym.analysis"""
