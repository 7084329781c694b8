"""The Temporal journal converter tags the conversation store's durable loads and saves with their conversation.

`TemporalConversationStore`'s activities carry these values; `ConversationPayloadCodec` encrypts a
payload the converter tagged (tests/durable/test_journal_temporal.py runs the codec end to end).
"""

from __future__ import annotations

from pydantic_ai.conversation import Conversation

from durable_recall.conversations import LoadConversation, LoadedConversation, SaveConversation
from durable_recall.stores import conversation_of
from durable_recall.temporal import ConversationPayloadConverter
from durable_recall.temporal._journal import CONVERSATION_METADATA_KEY


def test_the_conversation_store_operations_name_their_conversation() -> None:
    conversation = Conversation(conversation_id='chat-7')
    values = [
        LoadConversation(conversation_id='chat-7'),
        LoadedConversation(conversation=conversation),
        SaveConversation(conversation=conversation, save_id='s1'),
    ]
    assert [conversation_of(value) for value in values] == ['chat-7'] * 3
    assert conversation_of(LoadedConversation(conversation=None)) is None


def test_the_converter_tags_every_payload_of_a_call_naming_a_conversation() -> None:
    converter = ConversationPayloadConverter()
    tagged = converter.to_payloads(
        [SaveConversation(conversation=Conversation(conversation_id='chat-7'), save_id='s'), None]
    )
    assert [p.metadata[CONVERSATION_METADATA_KEY] for p in tagged] == [b'chat-7', b'chat-7']
    plain = converter.to_payloads(['hello', None])
    assert all(CONVERSATION_METADATA_KEY not in p.metadata for p in plain)
