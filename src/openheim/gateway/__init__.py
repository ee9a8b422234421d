"""Chat gateways (``openheim gateway``): Telegram, Discord and WhatsApp as one more surface.

Each platform's client normalises its messages into one ``Inbound`` record; the pipeline
(``pipeline.Gateway``) authorises, rate-limits and routes it to the sender's stored session,
runs the agent headless and sends the reply back formatted for the platform. Nothing here is
imported by the other commands.
"""
