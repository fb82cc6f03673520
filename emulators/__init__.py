"""ccgym.emulators"""
