"""What the bot shows: embeds, message text and images built from plain data, always within
Discord's limits (``limits``).  The cogs fetch data and call these builders; nothing here touches
the database or the network, so every view is tested without Discord.
"""
