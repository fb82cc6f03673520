"""ccgym.envs: the rollout engine and gymnasium environments over it.

The engine (envs/engine.py) steps N simulations of the vector simulator, each with its
learned flows among competitors, and holds every rule of an episode; the envs are adapters
over it. Importing this package registers "ccgym/Link-v0" (envs/link_env.py: one flow
alone), natively vectorized by envs/vector.py, and "ccgym/SharedLink-v0"
(envs/shared_link.py: one learned flow among classic competitors). Several learned flows on
one link: the RLlib multi-agent env ccgym.envs.multi_agent.SharedLinkMultiAgentEnv (agents
"flow_0", ...); what competes is EnvConfig data (envs/config.py, envs/competitors.py).

    import ccgym.envs, gymnasium
    env = gymnasium.make("ccgym/Link-v0", config={"links": "indigo-synthetic"})
    vec = gymnasium.make_vec("ccgym/Link-v0", num_envs=32,
                             vectorization_mode="vector_entry_point")
"""

from gymnasium.envs.registration import register, registry

LINK_ENV_ID = "ccgym/Link-v0"
SHARED_LINK_ENV_ID = "ccgym/SharedLink-v0"
MULTI_AGENT_ENTRY_POINT = "ccgym.envs.multi_agent:SharedLinkMultiAgentEnv"

# Re-importing (e.g. in a Ray worker that already has it) must not register twice.
if LINK_ENV_ID not in registry:
    register(id=LINK_ENV_ID, entry_point="ccgym.envs.link_env:LinkEnv",
             vector_entry_point="ccgym.envs.vector:VecLinkEnv")
if SHARED_LINK_ENV_ID not in registry:
    register(id=SHARED_LINK_ENV_ID, entry_point="ccgym.envs.shared_link:SharedLinkEnv")
