"""State models shared by the state store tests."""

from pydantic import BaseModel, Field, field_serializer, field_validator


class CounterState(BaseModel):
    count: int = Field(default=0)


class User(BaseModel):
    name: str = "anon"
    age: int = 0


class Profile(BaseModel):
    user: User = Field(default_factory=User)
    tags: list[str] = Field(default_factory=list)
    meta: dict[str, int] = Field(default_factory=dict)


class MyRandomObject:
    def __init__(self, name: str = "default") -> None:
        self.name = name


class MyState(BaseModel):
    """The seed's typed state with a field serializer and validator."""

    model_config = {"arbitrary_types_allowed": True}
    my_obj: MyRandomObject = Field(default_factory=MyRandomObject)
    some_key: str = Field(default="some_value")

    @field_serializer("my_obj", when_used="always")
    def serialize_my_obj(self, my_obj: MyRandomObject) -> str:
        return my_obj.name

    @field_validator("my_obj", mode="before")
    @classmethod
    def deserialize_my_obj(cls, v: str | MyRandomObject) -> MyRandomObject:
        if isinstance(v, MyRandomObject):
            return v
        if isinstance(v, str):
            return MyRandomObject(v)
        raise ValueError(f"Invalid type for my_obj: {type(v)}")
